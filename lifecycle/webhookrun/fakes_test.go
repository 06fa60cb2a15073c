package webhookrun

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"

	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// fakeRegistrar records what is registered; its calls fail as told.
type fakeRegistrar struct {
	mu sync.Mutex
	// serves: the configured servers (nil: every kind)
	serves     map[webhook.Kind]bool
	registered map[string]bool // what the last run left
	// errors the next calls return, one per call, in order
	registeredErrs, listenErrs, applyErrs []error
	calls                                 []webhook.Bindings // every Apply, failed ones too
	listening                             []webhook.Kind
	listens                               int
	// applied receives each Apply's bindings when not nil
	applied chan webhook.Bindings
}

var (
	_ Registrar = (*fakeRegistrar)(nil)
	_ Listener  = (*fakeRegistrar)(nil)
)

func next(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

func (r *fakeRegistrar) Apply(_ context.Context, b webhook.Bindings) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, b)
	if r.applied != nil {
		r.applied <- b
	}
	return next(&r.applyErrs)
}

func (r *fakeRegistrar) Serves(k webhook.Kind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serves == nil || r.serves[k]
}

func (r *fakeRegistrar) Registered(context.Context) (map[string]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := next(&r.registeredErrs); err != nil {
		return nil, err
	}
	return r.registered, nil
}

func (r *fakeRegistrar) Listen(_ context.Context, kinds []webhook.Kind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listening = kinds
	r.listens++
	return next(&r.listenErrs)
}

// last is the names of the webhooks of the last Apply, admission then
// conversion CRDs ("-" when none was made).
func (r *fakeRegistrar) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return "-"
	}
	return names(r.calls[len(r.calls)-1])
}

func (r *fakeRegistrar) applies() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func names(b webhook.Bindings) string {
	var out []string
	for _, e := range b.Admission {
		out = append(out, e.Binding.Name)
	}
	for _, e := range b.Conversion {
		out = append(out, "crd:"+e.Binding.CRDName)
	}
	return strings.Join(out, ",")
}

// fakeRunner answers each hook run with what answer returns for it, and
// records the runs.
type fakeRunner struct {
	mu     sync.Mutex
	runs   []HookRun
	answer func(run HookRun) ([]byte, error)
}

var _ HookRunner = (*fakeRunner)(nil)

func (f *fakeRunner) RunWebhookHook(_ context.Context, run HookRun) ([]byte, error) {
	f.mu.Lock()
	f.runs = append(f.runs, run)
	f.mu.Unlock()
	return f.answer(run)
}

func (f *fakeRunner) ran() []HookRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// fakeSnapshots gives each binding's snapshot as one item naming it.
type fakeSnapshots struct{}

func (fakeSnapshots) Snapshots(h *loader.Hook, names []string) map[string]any {
	out := map[string]any{}
	for _, n := range names {
		out[n] = []map[string]any{{"filterResult": h.Name + "/" + n}}
	}
	return out
}

var _ Snapshots = fakeSnapshots{}

// hookOf is a hook of module ("" for a global hook) binding the webhooks.
func hookOf(name, module string, admission []loader.AdmissionBinding, conversion ...loader.ConversionBinding) *loader.Hook {
	return &loader.Hook{Name: name, Module: module, Config: &loader.HookConfig{Admission: admission, Conversion: conversion}}
}

func validating(name string, policy admissionregv1.FailurePolicyType) loader.AdmissionBinding {
	return loader.AdmissionBinding{Name: name, FailurePolicy: policy}
}

// modelOf is a tree of global hooks and modules (each with its hooks).
func modelOf(global []*loader.Hook, modules map[string][]*loader.Hook) *loader.Model {
	m := &loader.Model{Global: &loader.Global{Hooks: global}}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range modules {
			if !yield(n) {
				return
			}
		}
	}) {
		m.Modules = append(m.Modules, &loader.Module{Name: name, Key: name, Hooks: modules[name]})
	}
	return m
}

// state is a running tree of model with enabled modules (nil: no
// discovery yet).
func state(model *loader.Model, enabled []string) (*runstate.Trees, *runstate.Modules) {
	trees, modules := &runstate.Trees{}, runstate.NewModules()
	trees.Start(&runstate.Tree{Model: model})
	if enabled != nil {
		enable(modules, enabled...)
	}
	return trees, modules
}

// enable is a discovery that enabled these modules.
func enable(modules *runstate.Modules, names ...string) {
	modules.Edit(func(_ map[string]*runstate.Module, enabled *[]string) { *enabled = slices.Clone(names) })
	modules.MarkDiscovered()
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// parked: the loop waits for a change or a timer due in d, its only one
// (clock.Waiting counts every wait not fired; the loop keeps its timer
// while nothing moves it).
func parked(t *testing.T, clock *testclock.Manual, d time.Duration) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("the loop waiting on one timer of %s", d), func() bool {
		return clock.LongestWait() == d
	})
}

func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
