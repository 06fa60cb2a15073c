package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/health"
)

// withHealth runs a real health tracker on the package's API server beside
// the operator, as start wires it.
func (e *env) withHealth(opts health.Options) *health.Tracker {
	opts.Logger, opts.Objects = quiet(), watcher
	tr := health.NewTracker(health.KubeWatches(watcher), e.helm, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Run(ctx)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
	})
	e.reg.MustRegister(health.NewCollector(tr))
	return tr
}

// A module run hands its release to health: /status shows each deployed
// module's health (a ConfigMap-only release Healthy; a Deployment no
// controller rolls out on this control plane Progressing, then Degraded
// past its chart's timeout, naming it), /debug/modules (module list) its
// status, the metric too; a disabled module has none.
func TestStatusShowsHealth(t *testing.T) {
	t.Parallel()
	deploymentChart := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\nannotations:\n  " + health.TimeoutAnnotation + ": 2s\n",
		"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n" +
			"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: app, image: fake}]\n",
	}
	e := parallelSetup(t, merged(
		map[string]string{"modules/values.yaml": "echoEnabled: true\nwebEnabled: true\n", "modules/010-echo/values.yaml": "echo: {}\n", "modules/020-web/values.yaml": "web: {}\n"},
		withPrefix("modules/010-echo", moduleChart("echo", "echo")),
		withPrefix("modules/020-web", deploymentChart),
	), nil)
	var tr *health.Tracker
	e.configure = func(cfg *Config) {
		tr = e.withHealth(health.Options{})
		cfg.Health = tr
	}
	e.start()
	e.waitReady()
	status := func(name string) *health.ModuleHealth {
		for _, m := range e.op.Status().Modules {
			if m.Name == name {
				return m.Health
			}
		}
		return nil
	}
	e.eventually("echo Healthy on /status", func() bool { h := status("echo"); return h != nil && h.Status == health.Healthy && h.Total == 1 })
	e.eventually("web Degraded on /status", func() bool { h := status("web"); return h != nil && h.Status == health.Degraded })
	h := status("web")
	if len(h.Objects) != 1 || h.Objects[0].Kind != "Deployment" || h.Objects[0].Name != "web" || !strings.Contains(h.Objects[0].Message, "not Current 2s after its rollout") {
		t.Fatalf("web's objects on /status: %+v", h.Objects)
	}
	get := serveHandler(t, e.op.Handler(HTTPOptions{Namespace: e.ns}))
	_, body := get("/status")
	var st struct {
		Modules []struct {
			Name   string               `json:"name"`
			Health *health.ModuleHealth `json:"health"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Modules) != 2 || st.Modules[1].Health == nil || st.Modules[1].Health.Objects[0].Status != "InProgress" {
		t.Fatalf("/status: %v %s", err, body)
	}
	_, body = get("/debug/modules")
	if !strings.Contains(body, `"health": "Healthy"`) || !strings.Contains(body, `"health": "Degraded"`) {
		t.Fatalf("/debug/modules without health: %s", body)
	}
	if v := testutilGauge(e, "addon_operator_module_health", map[string]string{"module": "web", "status": "Degraded"}); v != 1 {
		t.Fatalf("addon_operator_module_health{web,Degraded} = %v", v)
	}
	// disabled: the release goes, and so does its health
	e.setConfigMap(map[string]string{"webEnabled": "false"})
	e.eventually("web's health forgotten", func() bool { return status("web") == nil })
	if _, ok := tr.Module("web"); ok {
		t.Fatal("the tracker still follows a disabled module")
	}
}

// testutilGauge is a gauge's value by labels (-1: no such series).
func testutilGauge(e *env, name string, labels map[string]string) float64 {
	mfs, err := e.op.metrics.Compact.Gatherer(e.reg).Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
