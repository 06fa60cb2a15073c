package loader

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parseV1Kubernetes reads kubernetes entries with their defaults and
// aliases.
func parseV1Kubernetes(raw json.RawMessage, cfg *HookConfig) error {
	type nameSelector struct {
		MatchNames []string `json:"matchNames"`
	}
	var entries []struct {
		Name       string `json:"name"`
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		// ExecuteHookOnEvent wins over its older alias WatchEvent; an
		// empty list means no events (snapshots only).
		ExecuteHookOnEvent           *[]string     `json:"executeHookOnEvent"`
		WatchEvent                   *[]string     `json:"watchEvent"`
		ExecuteHookOnSynchronization *flexBool     `json:"executeHookOnSynchronization"`
		WaitForSynchronization       *flexBool     `json:"waitForSynchronization"`
		KeepFullObjectsInMemory      *flexBool     `json:"keepFullObjectsInMemory"`
		NameSelector                 *nameSelector `json:"nameSelector"`
		// ResynchronizationPeriod is accepted and unused, as in the original.
		ResynchronizationPeriod string                `json:"resynchronizationPeriod"`
		LabelSelector           *metav1.LabelSelector `json:"labelSelector"`
		FieldSelector           *struct {
			MatchExpressions []FieldRequirement `json:"matchExpressions"`
		} `json:"fieldSelector"`
		Namespace *struct {
			NameSelector  *nameSelector         `json:"nameSelector"`
			LabelSelector *metav1.LabelSelector `json:"labelSelector"`
		} `json:"namespace"`
		JqFilter             string   `json:"jqFilter"`
		AllowFailure         bool     `json:"allowFailure"`
		Queue                string   `json:"queue"`
		Group                string   `json:"group"`
		IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom"`
	}
	if err := decodeStrict(raw, &entries); err != nil {
		return fmt.Errorf("want a list of kubernetes bindings: %w", err)
	}
	for i, e := range entries {
		b := KubernetesBinding{
			Name: e.Name, APIVersion: e.APIVersion, Kind: e.Kind, JqFilter: e.JqFilter, AllowFailure: e.AllowFailure,
			Queue: e.Queue, Group: e.Group, IncludeSnapshotsFrom: e.IncludeSnapshotsFrom, LabelSelector: e.LabelSelector,
			ExecuteHookOnSynchronization: e.ExecuteHookOnSynchronization.or(true),
			// as in the original, only a binding with its own queue may
			// leave "main" to go on before its Synchronization ran
			WaitForSynchronization:  e.WaitForSynchronization.or(true) || e.Queue == "",
			KeepFullObjectsInMemory: e.KeepFullObjectsInMemory.or(true),
		}
		if b.Name == "" {
			b.Name = Kubernetes
		}
		if e.Kind == "" {
			return fmt.Errorf("entry %d: kind is required", i+1)
		}
		field, events := "executeHookOnEvent", e.ExecuteHookOnEvent
		if events == nil {
			field, events = "watchEvent", e.WatchEvent
		}
		if events == nil {
			b.ExecuteHookOnEvent = []string{EventAdded, EventModified, EventDeleted}
		} else {
			for _, ev := range *events {
				if ev != EventAdded && ev != EventModified && ev != EventDeleted {
					return fmt.Errorf("entry %d: %s %q: want Added, Modified or Deleted", i+1, field, ev)
				}
			}
			b.ExecuteHookOnEvent = append([]string{}, *events...)
		}
		if e.NameSelector != nil {
			b.NameSelector = e.NameSelector.MatchNames
		}
		if e.FieldSelector != nil {
			for _, r := range e.FieldSelector.MatchExpressions {
				switch r.Operator {
				case "=", "==", "Equals", "!=", "NotEquals":
				default:
					return fmt.Errorf("entry %d: fieldSelector operator %q: want Equals or NotEquals", i+1, r.Operator)
				}
			}
			b.FieldSelector = e.FieldSelector.MatchExpressions
		}
		if ns := e.Namespace; ns != nil {
			if ns.NameSelector != nil {
				b.Namespaces = ns.NameSelector.MatchNames
			}
			b.NamespaceLabelSelector = ns.LabelSelector
		}
		if err := finishKubernetes(&b); err != nil {
			return fmt.Errorf("entry %d (%s): %w", i+1, b.Name, err)
		}
		cfg.Kubernetes = append(cfg.Kubernetes, b)
	}
	return nil
}

// flexBool is a boolean that also takes the strings "true" and "false":
// the original reads these v1 fields as strings, so hooks write both.
type flexBool bool

func (f *flexBool) UnmarshalJSON(data []byte) error {
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		*f = flexBool(b)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil || (s != "true" && s != "false") {
		return fmt.Errorf("want true or false, got %s", data)
	}
	*f = s == "true"
	return nil
}

// or is the value, or def when the field is absent.
func (f *flexBool) or(def bool) bool {
	if f == nil {
		return def
	}
	return bool(*f)
}

// parseSettings reads a v1 hook's settings, which rate-limit its event
// runs (docs/operator.md, "Hook configs and binding contexts").
func parseSettings(raw json.RawMessage) (*HookSettings, error) {
	var s struct {
		ExecutionMinInterval string      `json:"executionMinInterval"`
		ExecutionBurst       json.Number `json:"executionBurst"`
	}
	if err := decodeStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("want {executionMinInterval, executionBurst}: %w", err)
	}
	out := &HookSettings{}
	if s.ExecutionMinInterval != "" {
		d, err := time.ParseDuration(s.ExecutionMinInterval)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("executionMinInterval: want a duration such as 5s, got %q", s.ExecutionMinInterval)
		}
		out.ExecutionMinInterval = d
	}
	if s.ExecutionBurst != "" {
		n, err := s.ExecutionBurst.Int64()
		if err != nil || n < 0 {
			return nil, fmt.Errorf("executionBurst: want a whole number, got %s", s.ExecutionBurst)
		}
		out.ExecutionBurst = int(n)
	}
	return out, nil
}
