package lifecycle

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"helm.sh/helm/v3/pkg/action"
	chartloader "helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/kube"
)

// A cluster the original addon-operator manages is taken over in place:
// its releases (storage label moduleChecksum, named after the module) are
// upgraded as the next revision of the same release, or deleted when
// their module is disabled; a release of a module's name that another
// tool made is reported and left alone, and so is an original's release
// without a module.
func TestTakeOverFromOriginal(t *testing.T) {
	t.Parallel()
	const hook = `{"beforeHelm": 1, "beforeDeleteHelm": 1, "afterDeleteHelm": 1}`
	files := merged(map[string]string{
		"modules/values.yaml":          "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: false\n",
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", hook, ""),
		"modules/002-beta/hooks/b.sh":  recordingHook("beta", hook, ""),
		"modules/003-gamma/hooks/c.sh": recordingHook("gamma", hook, ""),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")), withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")), withPrefix("zeta", moduleChart("zeta", "zeta")))
	e := parallelSetup(t, files, nil)

	// the releases as the original writes them (helm3lib: Secrets storage,
	// the module's name, the moduleChecksum storage label), and a foreign one
	cfg, err := helmtest.Config(restCfg, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	install := func(name, dir string, labels map[string]string) {
		// the release's values as the original hands them: the module's section and global
		t.Helper()
		c, err := chartloader.LoadDir(filepath.Join(e.dir, dir))
		if err != nil {
			t.Fatal(err)
		}
		inst := action.NewInstall(cfg)
		inst.ReleaseName, inst.Namespace, inst.Labels = name, e.ns, labels
		if _, err := inst.Run(c, map[string]any{name: map[string]any{"from": "original"}, "global": map[string]any{}}); err != nil {
			t.Fatalf("install %s: %v", name, err)
		}
	}
	original := map[string]string{kube.LabelOriginalChecksum: "1bc3b6b9c5ff7e5c1d35cfb0d6a1f0a9"}
	install("alpha", "modules/001-alpha", original)
	install("gamma", "modules/003-gamma", original)
	install("zeta", "zeta", original)
	install("beta", "modules/002-beta", nil)
	alphaCM, err := client.CoreV1().ConfigMaps(e.ns).Get(t.Context(), "alpha-values", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	e.start()
	e.waitReady()

	// alpha: revision 2 of the same release, ours now, its objects kept
	rel, err := action.NewGet(cfg).Run("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != 2 || rel.Info.Status != release.StatusDeployed || rel.Labels[kube.LabelManagedBy] != kube.ManagedByValue || rel.Labels[kube.LabelOriginalChecksum] != "" {
		t.Fatalf("alpha: revision %d, %s, labels %v; want revision 2, deployed, ours", rel.Version, rel.Info.Status, rel.Labels)
	}
	cm, err := client.CoreV1().ConfigMaps(e.ns).Get(t.Context(), "alpha-values", metav1.GetOptions{})
	if err != nil || cm.UID != alphaCM.UID {
		t.Fatalf("alpha's ConfigMap was recreated or lost: %v", err)
	}
	assertJSON(t, e.releaseValues("alpha"), `{}`)

	// gamma (disabled): its hooks around the uninstall, release gone
	if e.hasRelease("gamma") {
		t.Fatal("the original's release of disabled gamma stayed")
	}
	want := []string{"alpha:beforeHelm", "beta:beforeHelm", "gamma:beforeDeleteHelm", "gamma:afterDeleteHelm"}
	if got := e.sequence(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hook runs\n got  %v\n want %v", got, want)
	}

	// beta: a foreign release of its name is reported and untouched
	var beta ModuleStatus
	for _, m := range e.op.Status().Modules {
		if m.Name == "beta" {
			beta = m
		}
	}
	if beta.State != StateFailed || !strings.Contains(beta.LastError, "not managed by addon-operator") {
		t.Fatalf("beta status = %+v", beta)
	}
	// a terminal failure, with its reason on /status
	_, body := serveHandler(t, e.op.Handler(HTTPOptions{}))("/status")
	var served struct{ Modules []ModuleStatus }
	if err := json.Unmarshal([]byte(body), &served); err != nil || !slices.ContainsFunc(served.Modules, func(m ModuleStatus) bool {
		return m.Name == "beta" && m.Reason == "ReleaseConflict"
	}) {
		t.Fatalf("/status does not give beta's reason (%v): %s", err, body)
	}
	if n := testutil.ToFloat64(e.op.metrics.ReleaseConflicts.WithLabelValues("beta")); n != 1 {
		t.Fatalf("addon_operator_release_conflicts{module=beta} = %v", n)
	}
	events, err := client.CoreV1().Events(e.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, ev := range events.Items {
		if ev.Reason == "ReleaseConflict" && ev.InvolvedObject.Name == e.cmName && strings.Contains(ev.Message, "module beta") {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("%d ReleaseConflict Events on the ConfigMap, want 1: %+v", found, events.Items)
	}
	for name, wantVersion := range map[string]int{"beta": 1, "zeta": 1} {
		rel, err := action.NewGet(cfg).Run(name)
		if err != nil || rel.Version != wantVersion || rel.Labels[kube.LabelManagedBy] != "" {
			t.Fatalf("%s was touched: %v, %+v", name, err, rel)
		}
	}

	// a second reload reports the conflict again on /status, not in a new Event
	e.setConfigMap(map[string]string{"global": "x: 1\n"})
	e.eventually("the reload", func() bool { return len(e.sequence()) > len(want) })
	e.idle()
	events, _ = client.CoreV1().Events(e.ns).List(t.Context(), metav1.ListOptions{})
	found = 0
	for _, ev := range events.Items {
		if ev.Reason == "ReleaseConflict" {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("%d ReleaseConflict Events after a second reload, want 1", found)
	}
}
