package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/testmanifest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// TestDeployManifest applies deploy/addon-operator.yaml to the real API
// server (the Deployment, Service and Secret as a server-side dry run: no
// kubelet here) and runs the binary as its ServiceAccount, through
// impersonation, with the manifest's leader election: the Role's
// least-privilege rules must be enough for the operator to converge.
func TestDeployManifest(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "deploy", "addon-operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.Config)))
	ns := ""
	kinds := map[string]bool{}
	webhookPorts := 0
	for _, obj := range testmanifest.Objects(t, f) {
		gvk := obj.GroupVersionKind()
		kinds[gvk.Kind] = true
		if gvk.Kind == "NetworkPolicy" {
			webhookPorts += restrictedWebhookPorts(t, obj)
		}
		checkHardening(t, obj)
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		opts := metav1.CreateOptions{}
		switch gvk.Kind {
		case "Deployment", "Service", "Secret":
			opts.DryRun = []string{metav1.DryRunAll}
		case "ServiceAccount":
			ns = obj.GetNamespace()
		}
		_, err = dyn.Resource(m.Resource).Namespace(obj.GetNamespace()).Create(t.Context(), obj, opts)
		if err != nil && !apierrors.IsAlreadyExists(err) { // a second run against the same control plane
			t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
		}
	}
	if ns == "" {
		t.Fatal("no ServiceAccount in the manifest")
	}
	if !kinds["NetworkPolicy"] {
		t.Error("no NetworkPolicy in the manifest")
	}
	if webhookPorts != 2 {
		t.Errorf("%d webhook ports (9680, 9681) admitted by a NetworkPolicy, want both, each from named sources only", webhookPorts)
	}

	// the manifest's CRD (Module objects) is served before the operator
	// starts, as it is when kubectl apply precedes the pod's start
	if out, err := exec.Command(kubectlBin, "--kubeconfig", cp.KubeconfigPath, "wait", "--for=condition=Established",
		"crd/modules.addonops.io", "--timeout=60s").CombinedOutput(); err != nil {
		t.Fatalf("the Module CRD: %v\n%s", err, out)
	}

	// the admin kubeconfig, acting as the operator's ServiceAccount
	kc, err := clientcmd.LoadFromFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		u.Impersonate = "system:serviceaccount:" + ns + ":addon-operator"
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	files := merged(moduleFiles("001-alpha", "alpha", "deployed"), map[string]string{"modules/values.yaml": "alphaEnabled: true\n"})
	writeFiles(t, dir, files)
	if err := os.MkdirAll(filepath.Join(dir, "global-hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// the values Secret the manifest names, read and watched by name alone
	const valuesSecret = "addon-operator-values"
	putSecret(t, ns, valuesSecret, map[string]string{"alpha": "v: from-secret\n"})
	op := startOperator(t, "KUBECONFIG="+kubeconfig, "ADDON_OPERATOR_NAMESPACE="+ns, "ADDON_OPERATOR_LEADER_ELECTION=true",
		"MODULES_DIR="+filepath.Join(dir, "modules"), "GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"),
		"ADDON_OPERATOR_VALUES_SECRET="+valuesSecret)
	eventually(t, "the operator to converge as its ServiceAccount", func() bool {
		code, body := get(op.addr, "/readyz")
		return code == http.StatusOK && body == "ok\n"
	})
	if v := cmValue(ns, "001-alpha-cm"); v != "from-secret" {
		t.Fatalf("module ConfigMap v = %q, want the values Secret's", v)
	}
	// the Module object, written with the Role's rules alone
	// (docs/operator.md, "Module objects"); kubectl wait wants it to exist
	eventually(t, "the Module object of alpha", func() bool {
		return exec.Command(kubectlBin, "--kubeconfig", cp.KubeconfigPath, "get", "-n", ns, "module/alpha").Run() == nil
	})
	if out, err := exec.Command(kubectlBin, "--kubeconfig", cp.KubeconfigPath, "wait", "-n", ns, "--for=condition=Ready",
		"module/alpha", "--timeout=60s").CombinedOutput(); err != nil {
		logs, _ := os.ReadFile(op.log)
		t.Fatalf("kubectl wait module/alpha Ready: %v\n%s\n%s", err, out, logs)
	}
	// its watch, allowed by name: the change runs the module (whose Helm
	// upgrade needs the chart's own rules, which this Role leaves out)
	putSecret(t, ns, valuesSecret, map[string]string{"alpha": "v: rotated\n"})
	eventually(t, "the values Secret's change to run the module", func() bool {
		logs, _ := os.ReadFile(op.log)
		return strings.Contains(string(logs), "module values changed; running module")
	})
	if logs, _ := os.ReadFile(op.log); strings.Contains(string(logs), "values Secret not applied") {
		t.Fatalf("the values Secret's watch failed as the ServiceAccount:\n%s", logs)
	}
}

// checkHardening checks what the manifest promises beyond RBAC: bounded
// resources and volumes, the runtime's seccomp profile, and Role rules
// without verbs the operator never calls.
func checkHardening(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	switch obj.GetKind() {
	case "Deployment":
		pod, _, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
		if p, _, _ := unstructured.NestedString(pod, "securityContext", "seccompProfile", "type"); p != "RuntimeDefault" {
			t.Errorf("pod seccompProfile = %q", p)
		}
		containers, _, _ := unstructured.NestedSlice(pod, "containers")
		for _, c := range containers {
			if mem, _, _ := unstructured.NestedString(c.(map[string]any), "resources", "limits", "memory"); mem == "" {
				t.Errorf("container %v has no memory limit", c.(map[string]any)["name"])
			}
		}
		volumes, _, _ := unstructured.NestedSlice(pod, "volumes")
		for _, v := range volumes {
			if ed, ok := v.(map[string]any)["emptyDir"].(map[string]any); ok && ed["sizeLimit"] == nil {
				t.Errorf("emptyDir %v has no sizeLimit", v.(map[string]any)["name"])
			}
		}
	case "Role":
		rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
		for _, r := range rules {
			verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
			resources, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			// the values Secret alone is watched, by name
			names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
			for _, v := range verbs {
				if v == "patch" || v == "*" || (v == "watch" && slices.Contains(resources, "secrets") && len(names) == 0) {
					t.Errorf("Role grants %s on %v, which the operator never calls", v, resources)
				}
			}
		}
	case "Secret":
		if v, _, _ := unstructured.NestedString(obj.Object, "stringData", "webhook-secret"); v != "" {
			t.Errorf("the manifest ships a webhook secret (%q): anyone who reads it can trigger syncs", v)
		}
	}
}

// restrictedWebhookPorts counts the webhook ports (9680, 9681) a
// NetworkPolicy admits, failing the test for a rule that admits them from
// anywhere: the port authenticates no client without a client CA
// (docs/security.md, "The webhook port").
func restrictedWebhookPorts(t *testing.T, obj *unstructured.Unstructured) int {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ingress")
	n := 0
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		ports, _, _ := unstructured.NestedSlice(rule, "ports")
		from, _, _ := unstructured.NestedSlice(rule, "from")
		for _, p := range ports {
			port, _ := p.(map[string]any)
			if v := fmt.Sprint(port["port"]); v != "9680" && v != "9681" {
				continue
			}
			if len(from) == 0 {
				t.Errorf("NetworkPolicy %s admits port %v from anywhere", obj.GetName(), port["port"])
			}
			n++
		}
	}
	return n
}

// kubectlBin is the real kubectl, which the Module objects are read with.
const kubectlBin = "/usr/bin/kubectl"
