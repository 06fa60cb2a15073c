package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Binding types (HOOKS.md), and v1's "kubernetes".
const (
	OnStartup         = "onStartup"
	Schedule          = "schedule"
	OnKubernetesEvent = "onKubernetesEvent"
	Kubernetes        = "kubernetes"
	BeforeAll         = "beforeAll"
	AfterAll          = "afterAll"
	BeforeHelm        = "beforeHelm"
	AfterHelm         = "afterHelm"
	BeforeDeleteHelm  = "beforeDeleteHelm"
	AfterDeleteHelm   = "afterDeleteHelm"
)

// Watch event types, as v1 names them; v0's add/update/delete map to these.
const (
	EventAdded    = "Added"
	EventModified = "Modified"
	EventDeleted  = "Deleted"
)

// HookConfig is a hook's parsed binding configuration.
type HookConfig struct {
	// Version is "v0" (HOOKS.md) or "v1" (configVersion: v1).
	Version string
	// Orders of the ordered bindings a hook has, by binding type.
	Orders     map[string]float64
	Schedules  []ScheduleBinding
	Kubernetes []KubernetesBinding
}

// Order returns the hook's order for an ordered binding and whether it has it.
func (c *HookConfig) Order(binding string) (float64, bool) {
	o, ok := c.Orders[binding]
	return o, ok
}

// ScheduleBinding is one schedule entry.
type ScheduleBinding struct {
	Name                 string
	Crontab              string
	AllowFailure         bool
	Queue                string
	Group                string
	IncludeSnapshotsFrom []string
	Schedule             cron.Schedule `json:"-"`
}

// KubernetesBinding is one kubernetes (v1) or onKubernetesEvent (v0) entry,
// normalized to v1's fields.
type KubernetesBinding struct {
	Name       string
	APIVersion string
	// Kind as written; v0's lowercase kinds are resolved through discovery.
	Kind string
	// ExecuteHookOnEvent lists the watch events that run the hook; empty
	// runs it for none (the binding only feeds snapshots).
	ExecuteHookOnEvent []string
	// ExecuteHookOnSynchronization is false for every v0 binding: the
	// original runs v0 hooks for events only.
	ExecuteHookOnSynchronization bool
	WaitForSynchronization       bool
	KeepFullObjectsInMemory      bool
	NameSelector                 []string
	LabelSelector                *metav1.LabelSelector
	FieldSelector                []FieldRequirement
	// Namespaces restricts objects to these namespaces (empty: all).
	Namespaces []string
	// NamespaceLabelSelector restricts objects to namespaces with these labels.
	NamespaceLabelSelector *metav1.LabelSelector
	JqFilter               string
	Query                  *gojq.Code `json:"-"`
	AllowFailure           bool
	Queue                  string
	Group                  string
	IncludeSnapshotsFrom   []string
	// V0 says the binding came from onKubernetesEvent (its binding context
	// also carries resourceEvent, resourceNamespace, resourceKind, resourceName).
	V0 bool
}

// FieldRequirement is one fieldSelector expression.
type FieldRequirement struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
}

var (
	orderedBindings = []string{OnStartup, BeforeAll, AfterAll, BeforeHelm, AfterHelm, BeforeDeleteHelm, AfterDeleteHelm}
	globalOnly      = []string{BeforeAll, AfterAll}
	moduleOnly      = []string{BeforeHelm, AfterHelm, BeforeDeleteHelm, AfterDeleteHelm}
	// webhookBindings are v1 bindings the original serves as admission and
	// conversion webhooks; this operator runs no webhook server.
	webhookBindings = []string{"kubernetesValidating", "kubernetesMutating", "kubernetesCustomResourceConversion"}
	cronParser      = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
)

// ParseHookConfig parses what a hook printed for --config (JSON, or YAML).
// global says whether it is a global hook, which decides the allowed bindings.
func ParseHookConfig(data []byte, global bool) (*HookConfig, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("config is neither JSON nor YAML: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(j, &top); err != nil || top == nil {
		return nil, fmt.Errorf("config must be a JSON object of bindings, got %s", preview(data))
	}
	cfg := &HookConfig{Version: "v0", Orders: map[string]float64{}}
	if v, ok := top["configVersion"]; ok {
		var s string
		if err := json.Unmarshal(v, &s); err != nil || (s != "v0" && s != "v1") {
			return nil, fmt.Errorf("configVersion: want \"v0\" or \"v1\", got %s", v)
		}
		cfg.Version = s
		delete(top, "configVersion")
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raw := top[k]
		switch {
		case slices.Contains(orderedBindings, k):
			if global && slices.Contains(moduleOnly, k) {
				return nil, fmt.Errorf("binding %q is for module hooks only, and this is a global hook", k)
			}
			if !global && slices.Contains(globalOnly, k) {
				return nil, fmt.Errorf("binding %q is for global hooks only, and this is a module hook", k)
			}
			var order float64
			if err := json.Unmarshal(raw, &order); err != nil {
				return nil, fmt.Errorf("%s: want an ORDER number, got %s", k, raw)
			}
			cfg.Orders[k] = order
		case k == Schedule:
			if err := parseSchedules(raw, cfg); err != nil {
				return nil, fmt.Errorf("schedule: %w", err)
			}
		case k == OnKubernetesEvent && cfg.Version == "v0":
			if err := parseV0Kubernetes(raw, cfg); err != nil {
				return nil, fmt.Errorf("onKubernetesEvent: %w", err)
			}
		case k == Kubernetes && cfg.Version == "v1":
			if err := parseV1Kubernetes(raw, cfg); err != nil {
				return nil, fmt.Errorf("kubernetes: %w", err)
			}
		case k == OnKubernetesEvent || k == Kubernetes:
			return nil, fmt.Errorf("binding %q is not part of configVersion %s (v0 uses onKubernetesEvent, v1 uses kubernetes)", k, cfg.Version)
		case k == "settings" && cfg.Version == "v1":
			if err := checkSettings(raw); err != nil {
				return nil, fmt.Errorf("settings: %w", err)
			}
		case slices.Contains(webhookBindings, k) && cfg.Version == "v1":
			return nil, fmt.Errorf("binding %q: admission and conversion webhooks are not supported by this operator", k)
		default:
			return nil, fmt.Errorf("unknown binding %q", k)
		}
	}
	return cfg, checkReferences(cfg)
}

func preview(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	if s == "" {
		return "nothing"
	}
	return strconv.Quote(s)
}

func decodeStrict(raw json.RawMessage, into any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func parseSchedules(raw json.RawMessage, cfg *HookConfig) error {
	var entries []struct {
		Name                 string   `json:"name"`
		Crontab              string   `json:"crontab"`
		AllowFailure         bool     `json:"allowFailure"`
		Queue                string   `json:"queue"`
		Group                string   `json:"group"`
		IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom"`
	}
	if err := decodeStrict(raw, &entries); err != nil {
		return fmt.Errorf("want a list of {name, crontab, allowFailure, queue, group, includeSnapshotsFrom}: %w", err)
	}
	for i, e := range entries {
		if e.Crontab == "" {
			return fmt.Errorf("entry %d: crontab is required", i+1)
		}
		sched, err := ParseCrontab(e.Crontab)
		if err != nil {
			return fmt.Errorf("entry %d: %w", i+1, err)
		}
		name := e.Name
		if name == "" {
			name = Schedule
		}
		cfg.Schedules = append(cfg.Schedules, ScheduleBinding{
			Name: name, Crontab: e.Crontab, AllowFailure: e.AllowFailure, Queue: e.Queue,
			Group: e.Group, IncludeSnapshotsFrom: e.IncludeSnapshotsFrom, Schedule: sched,
		})
	}
	return nil
}

// ParseCrontab parses a 6-field crontab with seconds, or a descriptor
// (@every 10s, @daily). Day-of-week accepts 1–7 with 7 for Sunday, as
// HOOKS.md documents, besides cron's 0–6.
func ParseCrontab(spec string) (cron.Schedule, error) {
	fields := strings.Fields(spec)
	if len(fields) == 6 {
		dow, err := sundayAsSeven(fields[5])
		if err != nil {
			return nil, fmt.Errorf("crontab %q: %w", spec, err)
		}
		fields[5] = dow
	} else if !strings.HasPrefix(spec, "@") {
		return nil, fmt.Errorf("crontab %q: want 6 fields (second minute hour day-of-month month day-of-week), got %d", spec, len(fields))
	}
	s, err := cronParser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, fmt.Errorf("crontab %q: %w", spec, err)
	}
	return s, nil
}

// sundayAsSeven rewrites the parts of a day-of-week field that use 7 into
// cron's numbering (7 → 0), expanding ranges that end at 7.
func sundayAsSeven(field string) (string, error) {
	parts := strings.Split(field, ",")
	var out []string
	for _, p := range parts {
		rng, step, hasStep := strings.Cut(p, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		if !isRange {
			if rng == "7" {
				out = append(out, "0")
			} else {
				out = append(out, p)
			}
			continue
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b != 7 {
			out = append(out, p)
			continue
		}
		n := 1
		if hasStep {
			var err error
			if n, err = strconv.Atoi(step); err != nil || n < 1 {
				return "", fmt.Errorf("day-of-week step %q", step)
			}
		}
		for d := a; d <= b; d += n {
			out = append(out, strconv.Itoa(d%7))
		}
	}
	return strings.Join(out, ","), nil
}

func compileJq(filter string) (*gojq.Code, error) {
	if filter == "" {
		return nil, nil
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		return nil, fmt.Errorf("jqFilter %q: %w", filter, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jqFilter %q: %w", filter, err)
	}
	return code, nil
}

func checkSelector(what string, s *metav1.LabelSelector) error {
	if s == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

var v0Events = map[string]string{"add": EventAdded, "update": EventModified, "delete": EventDeleted}

func parseV0Kubernetes(raw json.RawMessage, cfg *HookConfig) error {
	type expr struct {
		Key       string   `json:"key"`
		Operator  string   `json:"operator"`
		Operation string   `json:"operation"` // HOOKS.md's spelling
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

// checkSettings validates a v1 hook's settings. The original rate-limits a
// hook's event runs with them; this operator accepts them and does not
// (docs/operator.md, "Hook configs and binding contexts").
func checkSettings(raw json.RawMessage) error {
	var s struct {
		ExecutionMinInterval string      `json:"executionMinInterval"`
		ExecutionBurst       json.Number `json:"executionBurst"`
	}
	if err := decodeStrict(raw, &s); err != nil {
		return fmt.Errorf("want {executionMinInterval, executionBurst}: %w", err)
	}
	if s.ExecutionMinInterval != "" {
		if _, err := time.ParseDuration(s.ExecutionMinInterval); err != nil {
			return fmt.Errorf("executionMinInterval: %w", err)
		}
	}
	if s.ExecutionBurst != "" {
		if _, err := s.ExecutionBurst.Int64(); err != nil {
			return fmt.Errorf("executionBurst: want an integer, got %s", s.ExecutionBurst)
		}
	}
	return nil
}

func finishKubernetes(b *KubernetesBinding) error {
	code, err := compileJq(b.JqFilter)
	if err != nil {
		return err
	}
	b.Query = code
	if err := checkSelector("labelSelector", b.LabelSelector); err != nil {
		return err
	}
	return checkSelector("namespace labelSelector", b.NamespaceLabelSelector)
}

// checkReferences: includeSnapshotsFrom names kubernetes bindings of the
// same hook.
func checkReferences(cfg *HookConfig) error {
	names := map[string]bool{}
	for _, k := range cfg.Kubernetes {
		names[k.Name] = true
	}
	var errs []error
	check := func(binding string, refs []string) {
		for _, r := range refs {
			if !names[r] {
				errs = append(errs, fmt.Errorf("%s: includeSnapshotsFrom names %q, which is not a kubernetes binding of this hook", binding, r))
			}
		}
	}
	for _, s := range cfg.Schedules {
		check(s.Name, s.IncludeSnapshotsFrom)
	}
	for _, k := range cfg.Kubernetes {
		check(k.Name, k.IncludeSnapshotsFrom)
	}
	return errors.Join(errs...)
}
