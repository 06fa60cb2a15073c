package lifecycle

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

type recordingRegistrar struct {
	mu    sync.Mutex
	calls []webhook.Bindings
}

func (r *recordingRegistrar) Apply(_ context.Context, b webhook.Bindings) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, b)
	return nil
}

func (r *recordingRegistrar) Serves(webhook.Kind) bool { return true }

var _ WebhookRegistrar = (*recordingRegistrar)(nil)

// TestWebhooksWaitForDiscovery: until the first 'reload all modules'
// converged, which modules are enabled is not known, so the registration
// the last run left is not rewritten (a restart must not strip a module's
// webhooks), while requests still find the hook; once ready, only enabled
// modules' webhooks are registered.
func TestWebhooksWaitForDiscovery(t *testing.T) {
	hook := &loader.Hook{Name: "001-guard/hooks/v.sh", Module: "guard", Config: &loader.HookConfig{
		Admission: []loader.AdmissionBinding{{Name: "objects.guard.example.com"}},
	}}
	model := &loader.Model{Global: &loader.Global{}, Modules: []*loader.Module{{Name: "guard", Hooks: []*loader.Hook{hook}}}}
	trees := &treeHolder{}
	trees.p.Store(&runningTree{model: model})
	modules := newModuleRegistry()
	modules.reset(model)
	var ready bool
	reg := &recordingRegistrar{}
	w := &webhooks{cfg: Config{Now: time.Now}, logger: slog.New(slog.DiscardHandler), trees: trees, modules: modules,
		reg: reg, ready: func() bool { return ready }}

	w.sync(t.Context())
	if len(reg.calls) != 0 {
		t.Fatalf("registered before discovery: %+v", reg.calls)
	}
	if _, ok := w.table.admission["validating/objects.guard.example.com"]; !ok {
		t.Fatalf("before discovery a request finds no hook: %+v", w.table.admission)
	}

	ready = true
	modules.edit(func(_ map[string]*moduleState, enabled *[]string) { *enabled = []string{"guard"} })
	w.sync(t.Context())
	if len(reg.calls) != 1 || len(reg.calls[0].Admission) != 1 {
		t.Fatalf("after discovery: %+v, want the guard webhook registered", reg.calls)
	}
}
