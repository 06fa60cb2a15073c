package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	helmchart "helm.sh/helm/v3/pkg/chart"
	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/deploy/chart"
	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/internal/testmanifest"
)

// TestHelmChart lints, renders and installs the operator's chart
// (deploy/chart) with the real helm CLI (helmCLI) on the control plane
// where pods start: the CLI's render is the library's (the plain
// manifest's source), every object is accepted, the operator's pod is
// scheduled and Running on kwok's node, its ServiceAccount can do what the
// operator does and no more (the modules' rules narrowed to one
// namespace), an upgrade changes the pods and drops what it no longer
// renders, and the uninstall leaves nothing of the chart and never touches
// a module's release (docs/operator.md, "Installing with Helm"). kwok runs
// no containers: the pod's security context and the NetworkPolicies are
// checked for acceptance, not effect.
func TestHelmChart(t *testing.T) {
	p := workloadsPlane(t)
	ctx := t.Context()
	ns, mods, other := p.namespace(t, "chart"), p.namespace(t, "chart-mods"), p.namespace(t, "chart-other")
	const rel = "addon-operator"
	sa := "system:serviceaccount:" + ns + ":" + rel
	for _, n := range []string{ns, other} {
		if _, err := p.Client.CoreV1().Secrets(n).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
			StringData: map[string]string{"token": "t0ken"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := helmtest.Config(p.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	// a module's release, as the operator keeps it (Helm's Secrets in its
	// namespace), with an object of its own
	modInst := action.NewInstall(cfg)
	modInst.ReleaseName, modInst.Namespace = "alpha", ns
	modInst.Labels = map[string]string{"addonops.io/managed-by": "addon-operator", "addonops.io/instance": ns + ".addon-operator"}
	if _, err := modInst.RunWithContext(ctx, &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "alpha", Version: "0.1.0", APIVersion: "v2"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alpha-cm}\ndata: {v: x}\n")}}}, nil); err != nil {
		t.Fatal(err)
	}

	helm := helmCLI(t, p.KubeconfigPath)
	helm("lint", "--strict", chart.Dir(), "-f", valuesFile(t, chart.PlainValues()))
	rendered, err := chart.Render(chart.Name, chart.Name, chart.PlainValues())
	if err != nil {
		t.Fatal(err)
	}
	if out := helm("template", chart.Name, chart.Dir(), "-n", chart.Name, "-f", valuesFile(t, chart.PlainValues())); out != rendered {
		t.Errorf("helm template differs from chart.Render:\n%s", out)
	}

	values := map[string]any{
		"git":     map[string]any{"url": "https://git.example.com/addons.git", "credentials": map[string]any{"existingSecret": "git-creds", "tokenKey": "token"}},
		"cluster": map[string]any{"name": "test"},
		"rbac": map[string]any{"modules": map[string]any{
			"rules":      []any{map[string]any{"apiGroups": []any{"", "apps"}, "resources": []any{"configmaps", "deployments"}, "verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"}}},
			"namespaces": []any{mods},
		}},
	}
	start := time.Now()
	helm("install", rel, chart.Dir(), "-n", ns, "-f", valuesFile(t, values))
	objs := manifestObjects(t, helm("get", "manifest", rel, "-n", ns))
	dyn := dynamic.NewForConfigOrDie(p.Config)
	for _, o := range objs { // each one the API server took, as rendered
		if _, err := dyn.Resource(o.gvr).Namespace(o.obj.GetNamespace()).Get(ctx, o.obj.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("%s %s: %v", o.obj.GetKind(), o.obj.GetName(), err)
		}
	}
	for _, kind := range []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "Deployment", "Service", "NetworkPolicy"} {
		if !hasKind(objs, kind) {
			t.Errorf("no %s installed", kind)
		}
	}
	// running waits for exactly n pods, all Running on kwok's node with
	// env in their environment
	running := func(n int, env string) []corev1.Pod {
		var pods []corev1.Pod
		within(t, 20*time.Second, "the operator's pods to run on kwok's node", func() bool {
			list, err := p.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + rel})
			if err != nil {
				return false
			}
			pods = pods[:0]
			for _, pod := range list.Items {
				if pod.DeletionTimestamp == nil && pod.Spec.NodeName == testenv.NodeName && pod.Status.Phase == corev1.PodRunning && strings.Contains(envOf(pod), env) {
					pods = append(pods, pod)
				}
			}
			return len(pods) == n && len(list.Items) == n
		})
		return pods
	}
	pod := running(1, "GIT_REF=main\n")[0]
	if sc := pod.Spec.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || pod.Spec.ServiceAccountName != rel {
		t.Errorf("pod security context %+v, service account %q", sc, pod.Spec.ServiceAccountName)
	}
	t.Logf("installed and running in %s", time.Since(start).Round(time.Millisecond))

	// The ServiceAccount's rights, asked as itself: what the operator calls
	// (docs/operator.md, "Installing with Helm") and nothing beside it.
	impersonated := rest.CopyConfig(p.Config)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: sa}
	asSA := kubernetes.NewForConfigOrDie(impersonated)
	can := func(verb, group, resource, namespace, name string) bool {
		r, err := asSA.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace, Name: name}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	type right struct {
		verb, group, resource, ns, name string
		want                            bool
	}
	rights := func(modules bool) []right {
		return []right{
			// the values ConfigMap and <name>-source
			{"get", "", "configmaps", ns, "addon-operator", true}, {"watch", "", "configmaps", ns, "", true},
			{"create", "", "configmaps", ns, "", true}, {"update", "", "configmaps", ns, "addon-operator-source", true},
			{"delete", "", "configmaps", ns, "addon-operator", false}, {"patch", "", "configmaps", ns, "addon-operator", false},
			// Helm's release Secrets, and the values Secret watched by name
			{"list", "", "secrets", ns, "", true}, {"create", "", "secrets", ns, "", true}, {"delete", "", "secrets", ns, "sh.helm.release.v1.alpha.v1", true},
			{"watch", "", "secrets", ns, "addon-operator-values", true}, {"watch", "", "secrets", ns, "", false}, {"watch", "", "secrets", ns, "git-creds", false},
			{"create", "", "events", ns, "", true}, {"delete", "", "events", ns, "", false},
			{"update", "coordination.k8s.io", "leases", ns, "addon-operator", true}, {"delete", "coordination.k8s.io", "leases", ns, "addon-operator", false},
			// the Module objects (docs/operator.md, "Module objects"): status
			// updated, never patched, in its namespace alone
			{"create", "addonops.io", "modules", ns, "", true}, {"delete", "addonops.io", "modules", ns, "alpha", true},
			{"list", "addonops.io", "modules", ns, "", true}, {"update", "addonops.io", "modules/status", ns, "alpha", true},
			{"patch", "addonops.io", "modules", ns, "alpha", false}, {"create", "addonops.io", "modules", other, "", false},
			// no other namespace's Secrets, and nothing cluster-wide
			{"get", "", "secrets", other, "git-creds", false}, {"list", "", "secrets", "", "", false}, {"get", "", "secrets", mods, "", false},
			{"list", "", "namespaces", "", "", false}, {"create", "rbac.authorization.k8s.io", "clusterroles", "", "", false},
			// the modules' rules, in their namespace alone
			{"create", "apps", "deployments", mods, "", modules}, {"delete", "", "configmaps", mods, "x", modules},
			{"create", "apps", "deployments", other, "", false}, {"get", "", "configmaps", other, "", false},
		}
	}
	checkRights := func(modules bool) {
		t.Helper()
		for _, r := range rights(modules) {
			if got := can(r.verb, r.group, r.resource, r.ns, r.name); got != r.want {
				t.Errorf("%s may %s %s %s/%s: %v, want %v", sa, r.verb, r.resource, r.ns, r.name, got, r.want)
			}
		}
	}
	checkRights(true)
	// and through a real call: another namespace's Secret is refused
	if _, err := asSA.CoreV1().Secrets(other).Get(ctx, "git-creds", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount read %s/git-creds: %v", other, err)
	}

	// Upgrade: a standby replica, a new ref, and no modules' rules (their
	// ClusterRole and RoleBinding go)
	values["replicas"] = 2
	values["git"].(map[string]any)["ref"] = "v2"
	delete(values, "rbac")
	helm("upgrade", rel, chart.Dir(), "-n", ns, "-f", valuesFile(t, values))
	running(2, "GIT_REF=v2\n")
	checkRights(false)
	gone := func(objs []manifestObject, what string) {
		t.Helper()
		for _, o := range objs {
			within(t, 20*time.Second, what+": "+o.obj.GetKind()+" "+o.obj.GetName()+" gone", func() bool {
				_, err := dyn.Resource(o.gvr).Namespace(o.obj.GetNamespace()).Get(ctx, o.obj.GetName(), metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
		}
	}
	var dropped []manifestObject
	kept := manifestObjects(t, helm("get", "manifest", rel, "-n", ns))
	for _, o := range objs {
		if !hasObject(kept, o) {
			dropped = append(dropped, o)
		}
	}
	if len(dropped) != 2 {
		t.Errorf("the upgrade dropped %d objects, want the modules' ClusterRole and RoleBinding", len(dropped))
	}
	gone(dropped, "the upgrade")

	// Uninstall: nothing of the chart stays (pods and ReplicaSets go with
	// their Deployment); the module's release and its objects do
	helm("uninstall", rel, "-n", ns)
	gone(kept, "the uninstall")
	within(t, 20*time.Second, "the operator's pods and ReplicaSets to go", func() bool {
		pods, err1 := p.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + rel})
		rss, err2 := p.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + rel})
		return err1 == nil && err2 == nil && len(pods.Items) == 0 && len(rss.Items) == 0
	})
	secrets, err := p.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range secrets.Items {
		left = append(left, s.Labels["name"])
	}
	if strings.Join(left, ",") != "alpha" {
		t.Errorf("Helm release Secrets after the uninstall: %v, want the module's alone", left)
	}
	if _, err := helmtest.Last(p.Config, ns, "alpha"); err != nil {
		t.Errorf("the module's release after the uninstall: %v", err)
	}
	if _, err := p.Client.CoreV1().ConfigMaps(ns).Get(ctx, "alpha-cm", metav1.GetOptions{}); err != nil {
		t.Errorf("the module's object after the uninstall: %v", err)
	}
	t.Logf("install, checks, upgrade and uninstall in %s", time.Since(start).Round(time.Millisecond))
}

type manifestObject struct {
	obj *unstructured.Unstructured
	gvr schema.GroupVersionResource
}

// manifestObjects decodes a release's manifest, with each object's
// resource as the chart's kinds map to theirs.
func manifestObjects(t *testing.T, manifest string) []manifestObject {
	t.Helper()
	resources := map[string]string{"ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles",
		"ClusterRoleBinding": "clusterrolebindings", "Deployment": "deployments", "Service": "services", "NetworkPolicy": "networkpolicies"}
	var out []manifestObject
	for _, obj := range testmanifest.FromString(t, manifest) {
		gvk := obj.GroupVersionKind()
		res, ok := resources[gvk.Kind]
		if !ok {
			t.Fatalf("the chart renders a %s, which this test does not know", gvk.Kind)
		}
		out = append(out, manifestObject{obj: obj, gvr: gvk.GroupVersion().WithResource(res)})
	}
	return out
}

func hasKind(objs []manifestObject, kind string) bool {
	for _, o := range objs {
		if o.obj.GetKind() == kind {
			return true
		}
	}
	return false
}

func hasObject(objs []manifestObject, want manifestObject) bool {
	for _, o := range objs {
		if o.gvr == want.gvr && o.obj.GetNamespace() == want.obj.GetNamespace() && o.obj.GetName() == want.obj.GetName() {
			return true
		}
	}
	return false
}

// envOf is a pod's first container's environment, NAME=value by line.
func envOf(pod corev1.Pod) string {
	var b strings.Builder
	for _, e := range pod.Spec.Containers[0].Env {
		b.WriteString(e.Name + "=" + e.Value + "\n")
	}
	return b.String()
}

var helmBuild struct {
	once sync.Once
	path string
	err  error
}

// helmCLI is the helm command line at the Helm version this module pins
// (go.mod's tool directive), built once per machine into the user's cache
// as the control plane is (a cold build takes about two minutes, a cached
// one seconds); the returned func runs it against kubeconfig with its own
// config and cache directories, failing the test on an error.
func helmCLI(t *testing.T, kubeconfig string) func(args ...string) string {
	t.Helper()
	helmBuild.once.Do(func() {
		version := ""
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, d := range bi.Deps {
				if d.Path == "helm.sh/helm/v3" {
					version = d.Version
				}
			}
		}
		if version == "" {
			helmBuild.err = errors.New("helm.sh/helm/v3 is not among the test binary's modules")
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			helmBuild.err = err
			return
		}
		helmBuild.path = filepath.Join(cache, "addon-operator", "helm-"+version, "helm")
		if _, err := os.Stat(helmBuild.path); err == nil {
			return
		}
		if err := os.MkdirAll(filepath.Dir(helmBuild.path), 0o755); err != nil {
			helmBuild.err = err
			return
		}
		tmp := helmBuild.path + ".tmp" + time.Now().Format("150405.000000000")
		out, err := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -X helm.sh/helm/v3/internal/version.version="+version,
			"-o", tmp, "helm.sh/helm/v3/cmd/helm").CombinedOutput()
		if err != nil {
			helmBuild.err = errors.New("go build helm: " + err.Error() + "\n" + string(out))
			return
		}
		helmBuild.err = os.Rename(tmp, helmBuild.path) // atomic: another test process may build it too
	})
	if helmBuild.err != nil {
		t.Fatal(helmBuild.err)
	}
	home := t.TempDir()
	return func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), helmBuild.path, append(args, "--kubeconfig", kubeconfig)...)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
}

// valuesFile writes values as a YAML file for helm -f.
func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := sigsyaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}
