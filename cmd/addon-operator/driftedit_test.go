package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hand edit of a release's object is put back within seconds by the
// binary as start wires it (health's watches tell the drift checks of the
// edit), with the auto-healing interval at its 5 minutes.
func TestDriftCorrectedOnEdit(t *testing.T) {
	ns := namespace(t, "driftedit")
	dir := t.TempDir()
	writeFiles(t, dir, merged(moduleFiles("001-alpha", "alpha", "1"), map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n", "global-hooks/.keep": "",
	}))
	op := startOperator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "ADDON_OPERATOR_MODULES_DIR="+filepath.Join(dir, "modules"),
		"ADDON_OPERATOR_GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"))
	eventually(t, "alpha installed", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	eventually(t, "alpha followed by health", func() bool {
		_, body := get(op.addr, "/status")
		return strings.Contains(body, `"status":"Healthy"`) || strings.Contains(body, `"status": "Healthy"`)
	})

	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "001-alpha-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "hand"
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, "the hand edit put back", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the hand edit was put back after %s", took)
	}
	t.Logf("the hand edit was put back after %s", time.Since(start).Round(time.Millisecond))
}

// A release object deleted by hand is put back by the next run of its
// module, health's watches on (a no-change run asks them whether the
// objects are there: docs/operator.md, "Helm releases").
func TestDeletedObjectPutBackByRun(t *testing.T) {
	ns := namespace(t, "deleted")
	dir := t.TempDir()
	writeFiles(t, dir, merged(moduleFiles("001-alpha", "alpha", "1"), map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n", "global-hooks/.keep": "",
	}))
	op := startOperator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "ADDON_OPERATOR_MODULES_DIR="+filepath.Join(dir, "modules"),
		"ADDON_OPERATOR_GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"))
	eventually(t, "alpha followed by health", func() bool {
		_, body := get(op.addr, "/status")
		return strings.Contains(body, `"status":"Healthy"`) || strings.Contains(body, `"status": "Healthy"`)
	})
	if err := client.CoreV1().ConfigMaps(ns).Delete(context.Background(), "001-alpha-cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// an unused global key: a reload that runs alpha with nothing changed
	writeFiles(t, dir, map[string]string{"modules/values.yaml": "alphaEnabled: true\nglobal:\n  unused: 1\n"})
	eventually(t, "the deleted ConfigMap put back", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
}
