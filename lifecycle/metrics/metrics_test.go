package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
)

func TestHookRunLabels(t *testing.T) {
	t.Parallel()
	h := &loader.Hook{Name: "001-alpha/hooks/sub/a.sh", Module: "alpha", Config: &loader.HookConfig{
		Schedules:  []loader.ScheduleBinding{{Name: "every", Queue: "slow"}},
		Kubernetes: []loader.KubernetesBinding{{Name: "pods"}},
	}}
	global := &loader.Hook{Name: "g.sh"}
	cases := []struct {
		hook    *loader.Hook
		binding string
		want    HookRun
	}{
		{h, "every", HookRun{Module: "alpha", Hook: "hooks/sub/a.sh", BindingType: loader.Schedule, Activation: "Schedule", Queue: "slow", OldName: h.Name}},
		{h, "pods", HookRun{Module: "alpha", Hook: "hooks/sub/a.sh", BindingType: loader.Kubernetes, Activation: "Kubernetes", Queue: "main", OldName: h.Name}},
		{h, loader.BeforeHelm, HookRun{Module: "alpha", Hook: "hooks/sub/a.sh", BindingType: loader.BeforeHelm, Activation: "ModuleRun", Queue: "main", OldName: h.Name}},
		{global, loader.BeforeAll, HookRun{Hook: "g.sh", BindingType: loader.BeforeAll, Activation: "ReloadAllModules", Queue: "main", OldName: "g.sh"}},
		{global, loader.OnStartup, HookRun{Hook: "g.sh", BindingType: loader.OnStartup, Activation: "OperatorStartup", Queue: "main", OldName: "g.sh"}},
	}
	for _, c := range cases {
		if got := HookRunOf(c.hook, c.binding); got != c.want {
			t.Errorf("HookRunOf(%s, %s) = %+v, want %+v", c.hook.Name, c.binding, got, c.want)
		}
	}
}

// The original's names are registered and a hook run lands in its family:
// a module hook's in module_hook_run_*, a failure in its errors.
func TestRecorderOriginalNames(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg, func() (string, string) { return "refs/heads/main", "abc" })
	h := &loader.Hook{Name: "001-alpha/hooks/a.sh", Module: "alpha"}
	m.HookRan(HookRunOf(h, loader.BeforeHelm), loader.BeforeHelm, time.Millisecond, &executor.Usage{}, nil, false)
	m.HookRan(HookRunOf(h, loader.BeforeHelm), loader.BeforeHelm, time.Millisecond, &executor.Usage{}, errors.New("exit 1"), false)
	m.HookRan(HookRunOf(h, loader.BeforeHelm), loader.BeforeHelm, time.Millisecond, &executor.Usage{}, errors.New("exit 1"), true)
	labels := []string{"alpha", "hooks/a.sh", loader.BeforeHelm, "ModuleRun", "main"}
	if got := testutil.ToFloat64(m.module.successes.WithLabelValues(labels...)); got != 1 {
		t.Errorf("successes %v", got)
	}
	if got := testutil.ToFloat64(m.module.errors.WithLabelValues(labels...)); got != 1 {
		t.Errorf("errors %v", got)
	}
	if got := testutil.ToFloat64(m.module.allowedErrors.WithLabelValues(labels...)); got != 1 {
		t.Errorf("allowed errors %v", got)
	}
	n, err := testutil.GatherAndCount(m.Compact.Gatherer(reg), "addon_operator_git_revision_info", "addon_operator_module_hook_run_seconds", "addon_operator_tasks_queue_length")
	if err != nil || n < 2 {
		t.Errorf("gathered %d series (%v)", n, err)
	}
}
