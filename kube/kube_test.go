package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

var (
	restCfg *rest.Config
	// kubeconfigPath is restCfg as a file, for child processes
	kubeconfigPath string
	client         kubernetes.Interface
	nsSeq          atomic.Int64
)

func TestMain(m *testing.M) {
	if os.Getenv(fenceChildEnv) != "" {
		os.Exit(fenceChild())
	}
	os.Exit(testenv.Main(m, func(cp *testenv.ControlPlane) {
		restCfg = cp.Config
		kubeconfigPath = cp.KubeconfigPath
		client = kubernetes.NewForConfigOrDie(restCfg)
	}))
}

func namespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("kube-test-%d", nsSeq.Add(1))
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestConfigMapUpdate(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cm := NewConfigMap(client, ns, "addon-operator")
	data, err := cm.Get(t.Context())
	if err != nil || len(data) != 0 {
		t.Fatalf("missing ConfigMap: %v, %v (want empty data)", data, err)
	}
	// created when missing
	_, v1, err := cm.Update(t.Context(), func(d map[string]string) (map[string]string, error) {
		d["global"] = "a: 1\n"
		return d, nil
	})
	if err != nil || v1 == "" {
		t.Fatalf("create: version %q, %v", v1, err)
	}
	// a user's edit lands between our read and our write: the write
	// conflicts, is re-applied on fresh data, and both edits survive
	calls := 0
	_, v2, err := cm.Update(t.Context(), func(d map[string]string) (map[string]string, error) {
		calls++
		if calls == 1 {
			user, _ := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "addon-operator", metav1.GetOptions{})
			user.Data["userKey"] = "mine"
			if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), user, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		}
		d["hookKey"] = "ours"
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := cm.Get(t.Context())
	if calls != 2 || got["userKey"] != "mine" || got["hookKey"] != "ours" || got["global"] != "a: 1\n" {
		t.Fatalf("calls = %d, data = %v", calls, got)
	}
	if live, _ := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "addon-operator", metav1.GetOptions{}); live.ResourceVersion != v2 || v2 == v1 {
		t.Fatalf("Update reported version %q (first %q), the ConfigMap has %q", v2, v1, live.ResourceVersion)
	}
	// an error from fn writes nothing
	if _, _, err := cm.Update(t.Context(), func(map[string]string) (map[string]string, error) { return nil, errors.New("refused") }); err == nil {
		t.Fatal("error swallowed")
	}
}

func TestConfigMapWatch(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cm := NewConfigMap(client, ns, "watched")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	seen := make(chan map[string]string, 10)
	panicked := make(chan struct{}, 1)
	// a panicking callback is logged and the watch goes on
	_, _, _ = cm.Update(ctx, func(d map[string]string) (map[string]string, error) { d["k"] = "panic"; return d, nil })
	go cm.Watch(ctx, func(d map[string]string, _ string) {
		if d["k"] == "panic" {
			panicked <- struct{}{}
			panic("a bug in the callback")
		}
		seen <- d
	})
	select {
	case <-panicked:
	case <-time.After(20 * time.Second):
		t.Fatal("no first event")
	}
	_, _, _ = cm.Update(ctx, func(d map[string]string) (map[string]string, error) { d["k"] = "1"; return d, nil })
	next := func() map[string]string {
		select {
		case d := <-seen:
			return d
		case <-time.After(20 * time.Second):
			t.Fatal("no event")
			return nil
		}
	}
	if d := next(); d["k"] != "1" {
		t.Fatalf("add: %v", d)
	}
	_ = client.CoreV1().ConfigMaps(ns).Delete(ctx, "watched", metav1.DeleteOptions{})
	if d := next(); len(d) != 0 {
		t.Fatalf("delete: %v, want empty data", d)
	}
}

func testChart(t testing.TB, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: whatever\nversion: 0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates/cm.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const goodManifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: {{ .Values.demo.v | quote }}\n"

func newHelm(t *testing.T, ns string) *Helm {
	t.Helper()
	h, err := NewHelm(restCfg, ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHelmUpgradeSkipsAndHeals(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{}}, Commit: "0123456789abcdef0123456789abcdef01234567"}
	res, err := h.Upgrade(t.Context(), r)
	if err != nil || !res.Upgraded || res.Reason != "installed" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	res, err = h.Upgrade(t.Context(), r)
	if err != nil || res.Upgraded {
		t.Fatalf("unchanged: %+v, %v", res, err)
	}
	// a value no template uses changes nothing
	r.Values["global"] = map[string]any{"unused": true}
	if res, _ := h.Upgrade(t.Context(), r); res.Upgraded {
		t.Fatal("an unused value upgraded the release")
	}
	// a missing resource is put back
	if err := client.CoreV1().ConfigMaps(ns).Delete(t.Context(), "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if absent, err := h.AbsentResources(t.Context(), "demo"); err != nil || len(absent) != 1 || absent[0] != "ConfigMap/demo" {
		t.Fatalf("absent = %v, %v", absent, err)
	}
	if res, err := h.Upgrade(t.Context(), r); err != nil || !res.Upgraded {
		t.Fatalf("heal: %+v, %v", res, err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "demo", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// a changed value upgrades, and the commit is recorded
	r.Values["demo"] = map[string]any{"v": "2"}
	if res, err := h.Upgrade(t.Context(), r); err != nil || !res.Upgraded {
		t.Fatalf("change: %+v, %v", res, err)
	}
	rel, err := helmtest.Last(restCfg, ns, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if c := rel.Labels[LabelCommit]; c != r.Commit {
		t.Fatalf("commit label = %q", c)
	}
	if names, err := h.Releases(t.Context()); err != nil || len(names) != 1 || names[0] != "demo" {
		t.Fatalf("releases = %v, %v", names, err)
	}
	if removed, err := h.Uninstall(t.Context(), "demo"); err != nil || !removed {
		t.Fatalf("uninstall: %v, %v", removed, err)
	}
	if removed, err := h.Uninstall(t.Context(), "demo"); err != nil || removed {
		t.Fatalf("second uninstall: %v, %v", removed, err)
	}
}

func TestHelmRepairsPendingAndFailedFirstInstall(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	good := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}}}
	if _, err := h.Upgrade(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	// a crash mid-upgrade leaves revision 2 pending
	last, err := h.cfg.Releases.Last("demo")
	if err != nil {
		t.Fatal(err)
	}
	pending := *last
	pending.Version = 2
	pending.Info = &release.Info{Status: release.StatusPendingUpgrade}
	if err := h.cfg.Releases.Create(&pending); err != nil {
		t.Fatal(err)
	}
	h.snapshot.invalidate()
	good.Values["demo"] = map[string]any{"v": "2"}
	if res, err := h.Upgrade(t.Context(), good); err != nil || !res.Upgraded {
		t.Fatalf("upgrade over a pending release: %+v, %v", res, err)
	}

	// a first install that fails (the API server refuses the object) ...
	bad := Release{Name: "broken", ChartDir: testChart(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_Valid\n"), Values: map[string]any{}}
	if _, err := h.Upgrade(t.Context(), bad); err == nil {
		t.Fatal("invalid object installed")
	}
	rel, err := h.cfg.Releases.Last("broken")
	if err != nil || rel.Info.Status != release.StatusFailed {
		t.Fatalf("want a failed release record: %v, %v", rel, err)
	}
	// ... is removed before the next try, which then installs
	bad.ChartDir = testChart(t, strings.ReplaceAll(goodManifest, "name: demo", "name: fixed"))
	bad.Values = map[string]any{"demo": map[string]any{"v": "x"}}
	if res, err := h.Upgrade(t.Context(), bad); err != nil || res.Reason != "installed" {
		t.Fatalf("retry after a failed first install: %+v, %v", res, err)
	}
}

func TestHelmLeavesOthersReleasesAlone(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	cfg, err := helmtest.Config(restCfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]map[string]string{"foreign": nil, "original": {LabelOriginalChecksum: "abc"}} {
		inst := action.NewInstall(cfg)
		inst.ReleaseName, inst.Namespace, inst.Labels = name, ns, labels
		if _, err := inst.Run(&chart.Chart{Metadata: &chart.Metadata{Name: name, Version: "0.1.0", APIVersion: "v2"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// a purge (the module is gone) removes only releases labelled as ours
	for _, name := range []string{"foreign", "original"} {
		if removed, err := h.Purge(t.Context(), name); err != nil || removed {
			t.Fatalf("purge of %s: %v, %v", name, removed, err)
		}
		if _, err := action.NewGet(cfg).Run(name); err != nil {
			t.Fatalf("%s gone after a purge: %v", name, err)
		}
	}
	r := Release{Name: "foreign", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}}}
	if _, err := h.Upgrade(t.Context(), r); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("upgrade of a foreign release: %v", err)
	}
	if _, err := h.Uninstall(t.Context(), "foreign"); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("uninstall of a foreign release: %v", err)
	}
	if names, _ := h.Releases(t.Context()); len(names) != 0 {
		t.Fatalf("foreign release listed as ours: %v", names)
	}
	if _, err := action.NewGet(cfg).Run("foreign"); err != nil {
		t.Fatalf("foreign release gone: %v", err)
	}
}
