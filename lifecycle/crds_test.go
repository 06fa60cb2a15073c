package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A module's crds/ is applied before its chart, which may then create
// objects of those kinds; a changed CRD file updates the CRD.
func TestModuleCRDs(t *testing.T) {
	t.Parallel()
	group := fmt.Sprintf("crds%d.example.com", nsSeq.Add(1))
	crd := func(kind, plural, label string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[3]s
  labels: {tier: %[4]q}
spec:
  group: %[3]s
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]s, singular: %[5]s, listKind: %[1]sList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`, kind, plural, group, label, plural[:len(plural)-1])
	}
	files := merged(map[string]string{
		"modules/values.yaml": "widgetsEnabled: true\n",
		// two documents in one file; doc-* and .yml files are not CRDs to apply
		"modules/001-widgets/crds/widgets.yaml":     crd("Widget", "widgets", "a") + "---\n" + crd("Gadget", "gadgets", "a"),
		"modules/001-widgets/crds/doc-ref.yaml":     "not: a CRD\n",
		"modules/001-widgets/crds/other.yml":        "not: a CRD either\n",
		"modules/001-widgets/templates/cr.yaml":     fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: one\n", group),
		"modules/001-widgets/Chart.yaml":            "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"modules/001-widgets/templates/gadget.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata:\n  name: two\n", group),
	})
	e := parallelSetup(t, files, nil)
	ext := apiextensions.NewForConfigOrDie(restCfg)
	t.Cleanup(func() {
		for _, n := range []string{"widgets." + group, "gadgets." + group} {
			_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(t.Context(), n, metav1.DeleteOptions{})
		}
	})
	e.start()
	e.waitReady()
	if !e.hasRelease("widgets") {
		t.Fatalf("no release: %+v", e.op.Status().Modules)
	}
	got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "gadgets."+group, metav1.GetOptions{})
	if err != nil || got.Labels["tier"] != "a" {
		t.Fatalf("gadgets CRD: %v, %v", got.GetLabels(), err)
	}

	if err := os.WriteFile(filepath.Join(e.dir, "modules/001-widgets/crds/widgets.yaml"), []byte(crd("Widget", "widgets", "b")+"---\n"+crd("Gadget", "gadgets", "a")), 0o644); err != nil {
		t.Fatal(err)
	}
	e.op.TreeChanged(Revision{})
	e.eventually("the widgets CRD updated", func() bool {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "widgets."+group, metav1.GetOptions{})
		return err == nil && got.Labels["tier"] == "b"
	})
}
