package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// A tree with the shapes of Deckhouse's modules (testdata/realtree, our own
// files written for this test): a library chart linked by an absolute path
// and a global schema with an absolute $ref (both under the image's
// /deckhouse, mapped onto the repository root), a oneOf section whose
// branches list part of the object's properties, an empty `properties:`
// extended by values.yaml, a disabled module whose required section is
// not configured, a chart reading global.enabledModules, and Go sources,
// Go tests and testdata/ under hooks/. It deploys through the binary in
// git mode; a commit whose link leaves the tree is refused with the file
// named, the running revision stays, and the fix commit goes through. A
// hook and a crds/ linked through the alias run and install from the
// checkout, though this host has no /deckhouse.
func TestRealTreeShapes(t *testing.T) {
	ns := namespace(t, "real-tree")
	root := t.TempDir()
	repo := newRepo(t, root)
	if err := os.CopyFS(repo.Dir, os.DirFS("testdata/realtree")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(repo.Dir, "modules/010-frontend/charts/helm_lib")
	symlink(t, link, "/deckhouse/helm_lib/charts/lib_helm")
	// a hook kept in a library at the root, and a crds/ kept elsewhere,
	// both linked through the alias: the hook runs as the checkout's file
	// (no /deckhouse on this host), the CRD is installed
	symlink(t, filepath.Join(repo.Dir, "modules/010-frontend/hooks/lib.sh"), "/deckhouse/shell_lib/hook.sh")
	symlink(t, filepath.Join(repo.Dir, "modules/010-frontend/crds"), "/deckhouse/shared/crds")
	c1 := commitFiles(t, repo, "the tree as Deckhouse's build lays it out", nil)

	// a config valid under the branches' partial properties
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{
		"global":   "highAvailability: true\n",
		"frontend": "controlPlane:\n  resourcesManagement:\n    mode: VPA\n    vpa:\n      maxCPU: \"2\"\n",
	}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	addr, _ := operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL="+srv.URL("addons"), "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"),
		"ADDON_OPERATOR_TREE_ROOT_ALIAS=/deckhouse", "GIT_EXTRA_PATHS=helm_lib:candi:shell_lib:shared")

	frontend := func() map[string]string {
		got, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "frontend", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		if got.Labels["heritage"] != "realtree" { // from the linked library chart
			return nil
		}
		return got.Data
	}
	eventually(t, "frontend deployed from the first commit", func() bool {
		return frontend() != nil && releaseCommit(ns, "frontend") == c1
	})
	want := map[string]string{
		"enabledModules": "frontend,bare", // the disabled pushgateway is not listed
		"mode":           "VPA",
		"ready":          "true", // its shell hook ran beside the Go files
		"fromLib":        "true", // the hook linked through the alias ran
		"clusterDomain":  "cluster.local",
	}
	for k, v := range want {
		if got := frontend()[k]; got != v {
			t.Errorf("frontend %s = %q, want %q", k, got, v)
		}
	}
	if _, err := client.Discovery().ServerResourcesForGroupVersion("realtree.example.com/v1"); err != nil {
		t.Errorf("the CRD of the crds/ linked through the alias: %v", err)
	}
	eventually(t, "bare deployed", func() bool {
		got, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "bare", metav1.GetOptions{})
		return err == nil && got.Data["name"] == "bare"
	})

	// a link that leaves the checkout once mapped: refused, naming it
	symlink(t, link, "/deckhouse/../outside/lib_helm")
	commitFiles(t, repo, "a link out of the tree", nil)
	refusedKeeping(t, addr, "the refusal on /status", "modules/010-frontend/charts/helm_lib", c1)

	// the fix goes through
	symlink(t, link, "/deckhouse/helm_lib/charts/lib_helm")
	tpl := filepath.Join(repo.Dir, "modules/010-frontend/templates/configmap.yaml")
	b, err := os.ReadFile(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tpl, append(b, []byte("  fixed: \"yes\"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	c3 := commitFiles(t, repo, "fix the link", nil)
	eventually(t, "the fix deployed", func() bool {
		return frontend()["fixed"] == "yes" && releaseCommit(ns, "frontend") == c3
	})
}
