package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlIn runs the real kubectl against the test's control plane.
func kubectlIn(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(kubectlBin, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...).CombinedOutput()
	return string(out), err
}

// A module's Events are on its Module object (docs/operator.md, "Events"):
// with the chart's CRD applied, a module whose hook starts failing and a
// hand edit of another module's object show ModuleRunFailed and Drifted
// in `kubectl describe module/NAME` and in `kubectl get events` selected by
// involvedObject.kind=Module, once however often the run is retried; the
// values ConfigMap gets neither.
func TestModuleEventsOnModuleObject(t *testing.T) {
	crd := filepath.Join("..", "..", "deploy", "chart", "addon-operator", "crds", "modules.addonops.io.yaml")
	if out, err := kubectlIn(t, "apply", "-f", crd); err != nil {
		t.Fatalf("kubectl apply the CRD: %v\n%s", err, out)
	}
	if out, err := kubectlIn(t, "wait", "--for=condition=Established", "crd/modules.addonops.io", "--timeout=60s"); err != nil {
		t.Fatalf("the CRD was not established: %v\n%s", err, out)
	}
	ns := namespace(t, "modevents")
	dir, marks := t.TempDir(), t.TempDir()
	writeFiles(t, dir, merged(moduleFiles("001-alpha", "alpha", "1"), moduleFiles("002-beta", "beta", "1"),
		alphaHook(`if [ -e "$MARKS/fail" ]; then echo "alpha is broken" >&2; exit 1; fi`),
		map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n", "global-hooks/.keep": ""}))
	op := startOperator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "MODULES_DIR="+filepath.Join(dir, "modules"),
		"GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"), "ADDON_OPERATOR_DRIFT=warn", "MARKS="+marks)
	for _, m := range []string{"alpha", "beta"} {
		eventually(t, "the Module object of "+m, func() bool {
			_, err := kubectlIn(t, "get", "-n", ns, "module/"+m)
			return err == nil
		})
		if out, err := kubectlIn(t, "wait", "-n", ns, "--for=condition=Ready", "module/"+m, "--timeout=60s"); err != nil {
			t.Fatalf("kubectl wait module/%s Ready: %v\n%s", m, err, out)
		}
	}

	// alpha's hook fails from now on; a change of its values runs it
	writeFiles(t, marks, map[string]string{"fail": ""})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{"alpha": "v: \"2\"\n"}}
	cms := client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	// a hand edit of beta's ConfigMap: drift, reported (warn)
	obj, err := cms.Get(t.Context(), "002-beta-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.Data["v"] = "hand"
	if _, err := cms.Update(t.Context(), obj, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ module, reason string }{{"alpha", "ModuleRunFailed"}, {"beta", "Drifted"}} {
		var out string
		eventually(t, tc.reason+" on module/"+tc.module, func() bool {
			out, _ = kubectlIn(t, "get", "events", "-n", ns, "--field-selector",
				"involvedObject.kind=Module,involvedObject.name="+tc.module, "-o", "custom-columns=REASON:.reason,API:.involvedObject.apiVersion,MSG:.message")
			return strings.Contains(out, tc.reason)
		})
		t.Logf("kubectl get events of module/%s:\n%s", tc.module, out)
		if !strings.Contains(out, "addonops.io/v1alpha1") {
			t.Errorf("the Event's involvedObject is not the Module object:\n%s", out)
		}
		desc, err := kubectlIn(t, "describe", "-n", ns, "module/"+tc.module)
		if err != nil {
			t.Fatalf("kubectl describe module/%s: %v\n%s", tc.module, err, desc)
		}
		if _, events, _ := strings.Cut(desc, "Events:"); !strings.Contains(events, tc.reason) {
			t.Errorf("kubectl describe module/%s does not show %s:\n%s", tc.module, tc.reason, desc)
		}
	}
	// alpha's retries fail the same way: no Event more
	before := hookErrors(op.addr)
	eventually(t, "alpha's run failing three times more", func() bool { return hookErrors(op.addr) >= before+3 })
	evs, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Module,involvedObject.name=alpha,reason=ModuleRunFailed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 || evs.Items[0].Count > 1 {
		t.Errorf("%d ModuleRunFailed Events for one failure retried, want 1", len(evs.Items))
	}
	onCM, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=ConfigMap"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range onCM.Items {
		if e.Reason == "ModuleRunFailed" || e.Reason == "Drifted" {
			t.Errorf("a module's Event on ConfigMap %s: %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// A module whose first run fails, before any pass of the Module objects
// wrote its object, still shows ModuleRunFailed on its object once it has
// one: the Event that went to the values ConfigMap meanwhile does not keep
// it off `kubectl describe module/NAME`.
func TestModuleEventsFirstRunFails(t *testing.T) {
	crd := filepath.Join("..", "..", "deploy", "chart", "addon-operator", "crds", "modules.addonops.io.yaml")
	if out, err := kubectlIn(t, "apply", "-f", crd); err != nil {
		t.Fatalf("kubectl apply the CRD: %v\n%s", err, out)
	}
	if out, err := kubectlIn(t, "wait", "--for=condition=Established", "crd/modules.addonops.io", "--timeout=60s"); err != nil {
		t.Fatalf("the CRD was not established: %v\n%s", err, out)
	}
	ns := namespace(t, "modevents1st")
	dir, marks := t.TempDir(), t.TempDir()
	writeFiles(t, marks, map[string]string{"fail": ""})
	writeFiles(t, dir, merged(moduleFiles("001-alpha", "alpha", "1"),
		alphaHook(`if [ -e "$MARKS/fail" ]; then echo "alpha is broken" >&2; exit 1; fi`),
		map[string]string{"modules/values.yaml": "alphaEnabled: true\n", "global-hooks/.keep": ""}))
	startOperator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "MODULES_DIR="+filepath.Join(dir, "modules"),
		"GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"), "MARKS="+marks)
	eventually(t, "ModuleRunFailed on module/alpha", func() bool {
		evs, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Module,involvedObject.name=alpha,reason=ModuleRunFailed"})
		return err == nil && len(evs.Items) == 1
	})
}
