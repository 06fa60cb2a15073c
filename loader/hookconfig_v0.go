package loader

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v0Events maps v0's event names to v1's.
var v0Events = map[string]string{"add": EventAdded, "update": EventModified, "delete": EventDeleted}

// parseV0Kubernetes reads onKubernetesEvent entries into v1's fields.
func parseV0Kubernetes(raw json.RawMessage, cfg *HookConfig) error {
	type expr struct {
		Key       string   `json:"key"`
		Operator  string   `json:"operator"`
		Operation string   `json:"operation"` // v0's documented spelling of operator
		Values    []string `json:"values"`
	}
	var entries []struct {
		Name     string   `json:"name"`
		Kind     string   `json:"kind"`
		Event    []string `json:"event"`
		Selector *struct {
			MatchLabels      map[string]string `json:"matchLabels"`
			MatchExpressions []expr            `json:"matchExpressions"`
		} `json:"selector"`
		NamespaceSelector *struct {
			MatchNames []string `json:"matchNames"`
			Any        bool     `json:"any"`
		} `json:"namespaceSelector"`
		// ObjectName selects one object by name (shell-operator's v0).
		ObjectName   string `json:"objectName"`
		JqFilter     string `json:"jqFilter"`
		AllowFailure bool   `json:"allowFailure"`
		DisableDebug bool   `json:"disableDebug"`
	}
	if err := decodeStrict(raw, &entries); err != nil {
		return fmt.Errorf("want a list of event descriptors: %w", err)
	}
	for i, e := range entries {
		// v0 hooks get no Synchronization run: the original starts the
		// monitor and sends events only
		b := KubernetesBinding{
			Name: e.Name, Kind: e.Kind, JqFilter: e.JqFilter, AllowFailure: e.AllowFailure, V0: true,
			ExecuteHookOnSynchronization: false, WaitForSynchronization: true, KeepFullObjectsInMemory: true,
		}
		if e.ObjectName != "" {
			b.NameSelector = []string{e.ObjectName}
		}
		if b.Name == "" {
			b.Name = OnKubernetesEvent
		}
		if e.Kind == "" {
			return fmt.Errorf("entry %d: kind is required", i+1)
		}
		events := e.Event
		if len(events) == 0 {
			events = []string{"add", "update", "delete"}
		}
		for _, ev := range events {
			v1, ok := v0Events[strings.ToLower(ev)]
			if !ok {
				return fmt.Errorf("entry %d: event %q: want add, update or delete", i+1, ev)
			}
			b.ExecuteHookOnEvent = append(b.ExecuteHookOnEvent, v1)
		}
		if e.Selector != nil {
			b.LabelSelector = &metav1.LabelSelector{MatchLabels: e.Selector.MatchLabels}
			for _, x := range e.Selector.MatchExpressions {
				op := x.Operator
				if op == "" {
					op = x.Operation
				}
				b.LabelSelector.MatchExpressions = append(b.LabelSelector.MatchExpressions,
					metav1.LabelSelectorRequirement{Key: x.Key, Operator: metav1.LabelSelectorOperator(op), Values: x.Values})
			}
		}
		if ns := e.NamespaceSelector; ns != nil && !ns.Any {
			b.Namespaces = ns.MatchNames
		}
		if err := finishKubernetes(&b); err != nil {
			return fmt.Errorf("entry %d (%s): %w", i+1, b.Name, err)
		}
		cfg.Kubernetes = append(cfg.Kubernetes, b)
	}
	return nil
}
