package lifecycle

import (
	"testing"

	"github.com/addonops/addon-operator/internal/steptime"
)

// A module run marks its steps in addon_operator_module_run_step_seconds
// (docs/performance.md, "Where a module run's time goes"): the hook runs',
// the values', Helm's and the outcome's.
func TestModuleRunSteps(t *testing.T) {
	t.Parallel()
	files := merged(
		map[string]string{
			"modules/values.yaml":          "alphaEnabled: true\n",
			"modules/001-alpha/hooks/m.sh": recordingHook("alpha", `{"beforeHelm": 1}`, ""),
		},
		withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")),
	)
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()

	got := map[string]uint64{}
	mfs, err := e.op.metrics.Compact.Gatherer(e.reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "addon_operator_module_run_step_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	// one run, one hook run (its temp files are marked at their writing
	// and their removal); a first install is an apply, not an absence check
	want := map[string]uint64{
		steptime.Status: 2, steptime.CRDs: 1, steptime.Sync: 1,
		steptime.HookFiles: 2, steptime.HookExec: 1, steptime.HookResults: 1, steptime.HookMetrics: 1,
		steptime.Values: 1, steptime.HelmRender: 1, steptime.HelmRelease: 1, steptime.HelmApply: 1, steptime.HelmAfter: 1,
		steptime.RunMetrics: 1, steptime.Health: 1, steptime.Record: 1,
	}
	for step, n := range want {
		if got[step] != n {
			t.Errorf("step %s observed %d times, want %d (all: %v)", step, got[step], n, got)
		}
	}
}
