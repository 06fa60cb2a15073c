package lifecycle

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/kube"
)

// <module>Maintenance: NoResourceReconciliation leaves the release as it
// is (labelled, not upgraded, not healed) while hooks still run; taking it
// away reconciles the release at once.
func TestMaintenanceMode(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml":          "alphaEnabled: true\n",
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", `{"beforeHelm": 1}`, ""),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()
	cfg, err := helmtest.Config(restCfg, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	last := func() *release.Release {
		t.Helper()
		rel, err := action.NewGet(cfg).Run("alpha")
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	runs := len(e.readRecords())

	e.setConfigMap(map[string]string{"alphaMaintenance": "NoResourceReconciliation", "alpha": "x: 1\n"})
	e.eventually("alpha's run in maintenance", func() bool { return len(e.readRecords()) > runs })
	e.idle()
	rel := last()
	if rel.Version != 1 || rel.Labels[kube.LabelMaintenance] != "true" {
		t.Fatalf("in maintenance: revision %d, labels %v; want revision 1, labelled", rel.Version, rel.Labels)
	}
	assertJSON(t, e.releaseValues("alpha"), `{}`)
	if n := testutil.ToFloat64(e.op.metrics.Maintenance.WithLabelValues("alpha")); n != 1 {
		t.Fatalf("addon_operator_module_maintenance = %v", n)
	}
	// no healing in maintenance
	if err := client.CoreV1().ConfigMaps(e.ns).Delete(t.Context(), "alpha-values", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.op.steps.checkAbsent(t.Context())
	e.idle()
	if _, err := client.CoreV1().ConfigMaps(e.ns).Get(t.Context(), "alpha-values", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a resource of a release in maintenance was healed: %v", err)
	}

	// back to Managed: the release is reconciled and the label goes
	e.setConfigMap(map[string]string{"alpha": "x: 1\n"})
	e.eventually("alpha reconciled", func() bool { r := last(); return r.Version == 2 })
	e.idle()
	if rel := last(); rel.Labels[kube.LabelMaintenance] != "" {
		t.Fatalf("labels after maintenance: %v", rel.Labels)
	}
	assertJSON(t, e.releaseValues("alpha"), `{"x":1}`)

	// a value that is neither mode is refused like values a schema refuses
	refused := testutil.ToFloat64(e.op.metrics.ConfigValuesErrors)
	e.setConfigMap(map[string]string{"alpha": "x: 2\n", "alphaMaintenance": "Sometimes"})
	e.eventually("the bad mode refused", func() bool { return testutil.ToFloat64(e.op.metrics.ConfigValuesErrors) > refused })
	e.idle()
	assertJSON(t, e.releaseValues("alpha"), `{"x":1}`)
}

// A module in maintenance whose release is stuck pending (a crash
// mid-upgrade) keeps it as it is: no repair, which would delete that
// revision, until maintenance ends.
func TestMaintenanceLeavesPendingRelease(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"},
		withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()
	e.stop()
	cfg, err := helmtest.Config(restCfg, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	last, err := cfg.Releases.Last("alpha")
	if err != nil {
		t.Fatal(err)
	}
	pending := *last
	pending.Version, pending.Info = last.Version+1, &release.Info{Status: release.StatusPendingUpgrade}
	if err := cfg.Releases.Create(&pending); err != nil {
		t.Fatal(err)
	}

	// a new operator (nothing cached) finds it in maintenance
	e.setConfigMap(map[string]string{"alphaMaintenance": "NoResourceReconciliation"})
	h, err := kube.NewHelm(restCfg, e.ns, quiet())
	if err != nil {
		t.Fatal(err)
	}
	restarted := &env{t: t, ns: e.ns, dir: e.dir, cmName: e.cmName, helm: h, records: e.records}
	restarted.start()
	restarted.waitReady()
	rel, err := helmtest.Last(restCfg, e.ns, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != pending.Version || rel.Info.Status != release.StatusPendingUpgrade {
		t.Fatalf("in maintenance: revision %d %s; want the pending revision %d left as it is", rel.Version, rel.Info.Status, pending.Version)
	}
	if st := restarted.op.Status().Modules[0]; st.State != StateReady {
		t.Fatalf("alpha: %+v", st)
	}
}
