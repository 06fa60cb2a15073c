package statusapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// The secrets a fixture holds: a module's values and a failed hook's
// output, which only /debug (local clients) may show.
const (
	secretValue  = "SECRET-VALUE-1d2f"
	secretOutput = "SECRET-HOOK-OUTPUT-9a7c"
)

type fakeRevisions struct {
	ready            bool
	treeErr, treeWhy string
	purgeErr         string
}

func (f fakeRevisions) Ready() bool                      { return f.ready }
func (f fakeRevisions) TreeStatus() (err, reason string) { return f.treeErr, f.treeWhy }
func (f fakeRevisions) PurgeError() string               { return f.purgeErr }

type fakeFailures map[string][2]string

func (f fakeFailures) HookFailure(hook string) (err, output string) { return f[hook][0], f[hook][1] }

type fakeHealth map[string]health.ModuleHealth

func (f fakeHealth) Module(m string) (health.ModuleHealth, bool) {
	h, ok := f[m]
	return h, ok
}

type fakeDrift struct {
	reports map[string]*driftcheck.Status
	diffErr error
}

func (f fakeDrift) Of(m string) *driftcheck.Status { return f.reports[m] }
func (f fakeDrift) Diff(_ context.Context, m string) (string, error) {
	if f.diffErr != nil {
		return "", f.diffErr
	}
	return "--- live " + m + "\n+++ chart\n", nil
}

type fakeBindings struct{}

func (fakeBindings) WatchStatus() []WatchStatus {
	return []WatchStatus{{Hook: "001-web/hooks/w.sh", Module: "web", Binding: "cms", Kind: "ConfigMap", Objects: 2}}
}
func (fakeBindings) Watches() []kube.WatchInfo { return []kube.WatchInfo{} }

// fakeWebhooks stands for the webhook part: its status type is its own.
type fakeWebhooks struct{ status any }

type webhookView struct {
	Bindings []string `json:"bindings"`
}

func (f fakeWebhooks) WebhookStatus() any { return f.status }
func (fakeWebhooks) DebugBindings(c *loader.HookConfig) []DebugBinding {
	var out []DebugBinding
	for _, a := range c.Admission {
		out = append(out, DebugBinding{Binding: loader.KubernetesValidating, Name: a.Name})
	}
	return out
}

var (
	_ Revisions    = fakeRevisions{}
	_ HookFailures = fakeFailures{}
	_ Health       = fakeHealth{}
	_ Drift        = fakeDrift{}
	_ Bindings     = fakeBindings{}
	_ Webhooks     = fakeWebhooks{}
)

// treeOf is a running tree of modules web (a failed hook's output, a
// secret in its values, health, drift) and idle (disabled, no chart),
// with a global hook.
func treeOf(t *testing.T) (*runstate.Trees, *runstate.Modules) {
	t.Helper()
	src := values.Source{
		Common: values.Values{"global": map[string]any{"region": "eu"}},
		Modules: []values.ModuleSource{
			{Name: "web", Values: values.Values{"web": map[string]any{"password": secretValue}}},
			{Name: "idle", Values: values.Values{"idle": map[string]any{}}},
		},
	}
	store, _, err := values.NewStore(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetConfig(map[string]string{"web": "size: 3\n", "global": "tier: prod\n"}); err != nil {
		t.Fatal(err)
	}
	model := &loader.Model{
		Global: &loader.Global{Hooks: []*loader.Hook{{Name: "start.sh", Config: &loader.HookConfig{Orders: map[string]float64{loader.OnStartup: 1}}}}},
		Modules: []*loader.Module{
			{Name: "web", Key: "web", Order: 1, Dir: "/tree/modules/001-web", Hooks: []*loader.Hook{{Name: "001-web/hooks/h.sh", Module: "web",
				Config: &loader.HookConfig{Orders: map[string]float64{loader.BeforeHelm: 5},
					Schedules:  []loader.ScheduleBinding{{Name: "tick", Crontab: "0 * * * * *"}},
					Kubernetes: []loader.KubernetesBinding{{Name: "cms", Kind: "ConfigMap"}},
					Admission:  []loader.AdmissionBinding{{Name: "check"}}}}}},
			{Name: "idle", Key: "idle", Order: 2, Dir: "/tree/modules/002-idle"},
		},
	}
	trees, modules := &runstate.Trees{}, runstate.NewModules()
	trees.Start(&runstate.Tree{Model: model, Store: store, Rev: gitsync.Revision{Commit: "abc123"}})
	modules.Reset(model)
	modules.Update("web", func(st *runstate.Module) {
		st.Enabled, st.State, st.LastError, st.LastOutput = true, runstate.StateFailed, "hook 001-web/hooks/h.sh failed", secretOutput
	})
	modules.Edit(func(_ map[string]*runstate.Module, enabled *[]string) { *enabled = []string{"web"} })
	return trees, modules
}

// options are a running operator's parts, as fakes.
func options(t *testing.T) Options {
	t.Helper()
	trees, modules := treeOf(t)
	ctx, cancel := context.WithCancel(context.Background())
	set := queue.NewSet(ctx, queue.Options{})
	t.Cleanup(func() { cancel(); set.Wait() })
	set.Main() // as Run makes it
	queues := &runstate.Queues{}
	queues.Set(set)
	reg, hooks := prometheus.NewRegistry(), prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "operator_gauge", Help: "h"}))
	hooks.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "hook_gauge", Help: "h"}))
	return Options{
		Tree: trees, Modules: modules, Queues: queues, Revisions: fakeRevisions{ready: true},
		Failures: fakeFailures{"001-web/hooks/h.sh": {"exit status 1", secretOutput}},
		Health:   fakeHealth{"web": {Status: health.Healthy}},
		Drift: fakeDrift{reports: map[string]*driftcheck.Status{"web": {Mode: runstate.DriftWarn,
			Objects: []drift.Object{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Fields: []string{"spec.replicas"}}}}}},
		Bindings: fakeBindings{}, Webhooks: fakeWebhooks{status: webhookView{Bindings: []string{"check"}}},
		Registry: reg, HookRegistry: hooks,
		Extra: func() map[string]any {
			return map[string]any{"source": map[string]string{"commit": "abc123"}, "ready": "overridden"}
		},
	}
}

var errBoom = errors.New("boom")

// get serves one GET of path to h from a client at remote, to the local
// address local (as the server's connection would say), by that address.
func get(t *testing.T, h http.Handler, path, remote, local string) (int, string) {
	t.Helper()
	return serve(t, h, path, remote, local, local)
}

// serve is get naming the server host in the Host header.
func serve(t *testing.T, h http.Handler, path, remote, local, host string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr, r.Host = remote, host
	if local != "" {
		addr, err := net.ResolveTCPAddr("tcp", local)
		if err != nil {
			t.Fatal(err)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr)))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

// local and remote clients of a server on 10.1.2.3:9115.
const (
	serverAddr = "10.1.2.3:9115"
	localPeer  = "127.0.0.1:40000"
	otherPod   = "10.1.2.4:40000"
)

func getLocal(t *testing.T, h http.Handler, path string) (int, string) {
	return get(t, h, path, localPeer, "127.0.0.1:9115")
}
