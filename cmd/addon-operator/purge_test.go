package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A commit that empties modules/ is refused by the purge guard; `source
// confirm-purge` lets exactly that commit through.
func TestConfirmPurge(t *testing.T) {
	ns := namespace(t, "purge")
	root := t.TempDir()
	repo := newRepo(t, root)
	commitFiles(t, repo, "alpha 1", alphaOn("1"))
	addr, _ := operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"))
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })

	empty := commitFiles(t, repo, "remove every module", map[string]string{"modules/values.yaml": "{}\n"}, "modules/001-alpha")
	eventually(t, "the purge refused", func() bool {
		e, _ := status(t, addr)["treeError"].(string)
		return strings.Contains(e, "purge guard") && strings.Contains(e, empty)
	})
	if cmValue(ns, "001-alpha-cm") != "1" {
		t.Fatal("a refused revision uninstalled alpha")
	}
	// what holds it (docs/operator.md, "Suspend, resume and sync")
	if got := heldBy(t, addr); len(got) != 1 || !strings.HasPrefix(got[0], "purge-guard ") {
		t.Fatalf("/status source.held = %v, want the purge guard", got)
	}
	if _, body := get(addr, "/metrics"); !strings.Contains(body, `addon_operator_source_held{by="purge-guard"} 1`) {
		t.Fatal(`addon_operator_source_held{by="purge-guard"} is not 1`)
	}

	cmd := exec.Command(binPath, "source", "confirm-purge", empty)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE="+ns)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("confirm-purge: %v\n%s", err, out)
	}
	eventually(t, "alpha purged once confirmed", func() bool {
		ok, _ := helmClient(t, ns).Has(t.Context(), "alpha")
		return !ok && status(t, addr)["revision"] == empty
	})
	if got := heldBy(t, addr); len(got) != 0 {
		t.Fatalf("/status source.held after the confirmation = %v", got)
	}
}
