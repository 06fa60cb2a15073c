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

// Binding types of a hook config (docs/operator.md, "Hook configs and
// binding contexts"): onKubernetesEvent is v0's, kubernetes is v1's, the
// others are both versions'.
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
	// Version is "v0" (the default) or "v1" (configVersion: v1).
	Version string
	// Orders of the ordered bindings a hook has, by binding type.
	Orders     map[string]float64
	Schedules  []ScheduleBinding
	Kubernetes []KubernetesBinding
	// Settings rate-limit the hook's runs from kubernetes events and
	// schedules (v1 `settings`); nil: no limit.
	Settings *HookSettings
	// Admission and Conversion are the v1 webhook bindings
	// (hookconfig_webhook.go).
	Admission  []AdmissionBinding
	Conversion []ConversionBinding
}

// HookSettings are a v1 hook's `settings`: at most ExecutionBurst runs at
// once, then one per ExecutionMinInterval, as shell-operator's rate limit.
type HookSettings struct {
	ExecutionMinInterval time.Duration // 0: no limit
	ExecutionBurst       int           // 0: 1
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
	// webhookBindings are v1's only (hookconfig_webhook.go)
	webhookBindings = []string{KubernetesValidating, KubernetesMutating, KubernetesConversion}
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
			if cfg.Settings, err = parseSettings(raw); err != nil {
				return nil, fmt.Errorf("settings: %w", err)
			}
		case (k == KubernetesValidating || k == KubernetesMutating) && cfg.Version == "v1":
			if err := parseAdmission(raw, k == KubernetesMutating, cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		case k == KubernetesConversion && cfg.Version == "v1":
			if err := parseConversion(raw, cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		case slices.Contains(webhookBindings, k):
			return nil, fmt.Errorf("binding %q is not part of configVersion v0 (webhooks need configVersion: v1)", k)
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
	for _, a := range cfg.Admission {
		check(a.Name, a.IncludeSnapshotsFrom)
	}
	for _, c := range cfg.Conversion {
		check(c.Name, c.IncludeSnapshotsFrom)
	}
	return errors.Join(errs...)
}
