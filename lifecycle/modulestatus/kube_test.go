package modulestatus

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// kubectlBin is the real kubectl the issue asks `get` and `wait` through.
const kubectlBin = "/usr/bin/kubectl"

var plane = testenv.Shared{}

func TestMain(m *testing.M) { os.Exit(plane.Main(m)) }

func kubectl(t *testing.T, cp *testenv.ControlPlane, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(kubectlBin, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...).CombinedOutput()
	return string(out), err
}

// The chart's CRD applied with the real kubectl; the writer, following a
// real runstate, keeps the objects of the running tree: `kubectl get
// modules` shows module list's columns, `kubectl wait` on Ready (and
// Stalled) returns, and a module that leaves the tree loses its object.
func TestModuleObjectsOnAPIServer(t *testing.T) {
	cp := plane.Get(t)
	crd := filepath.Join("..", "..", "deploy", "chart", "addon-operator", "crds", "modules.addonops.io.yaml")
	if out, err := kubectl(t, cp, "apply", "-f", crd); err != nil {
		t.Fatalf("kubectl apply the CRD: %v\n%s", err, out)
	}
	if out, err := kubectl(t, cp, "wait", "--for=condition=Established", "crd/modules.addonops.io", "--timeout=60s"); err != nil {
		t.Fatalf("the CRD was not established: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const ns = "modobj"
	client := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kc, err := NewKube(cp.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("0123abc", "alpha", "beta", "gamma"))
	setState(mods, map[string]runstate.Module{
		"alpha": {Enabled: true, State: runstate.StateReady},
		"beta":  {Enabled: true, State: runstate.StateFailed, LastError: "hook 10-a.sh: exit status 1\nsecond line"},
	})
	cc := &countingClient{Client: kc, writes: map[string]int{}}
	w := New(Options{Trees: trees, Modules: mods, Client: cc, MinInterval: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()

	var table string
	// an object is created, then its status written (a subresource): a
	// row is whole once its weight is there
	testwait.Until(t, "kubectl get modules to list the three modules, statuses written", func() bool {
		table, _ = kubectl(t, cp, "get", "modules", "-n", ns)
		lines := strings.Split(strings.TrimSpace(table), "\n")
		return len(lines) == 4 && strings.Contains(lineOf(lines, "alpha"), "10") &&
			strings.Contains(lineOf(lines, "beta"), "20") && strings.Contains(lineOf(lines, "gamma"), "30")
	})
	t.Logf("kubectl get modules:\n%s", table)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	for _, col := range []string{"NAME", "WEIGHT", "ENABLED", "STATE", "HEALTH", "READY", "DRIFT", "LAST ERROR"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("kubectl get modules: no %s column:\n%s", col, table)
		}
	}
	for _, want := range [][]string{{"alpha", "10", "true", "Ready", "True"}, {"beta", "20", "true", "Failed", "False", "hook 10-a.sh: exit status 1"},
		{"gamma", "30", "false", "Disabled", "False"}} {
		row := lineOf(lines, want[0])
		for _, f := range want {
			if !strings.Contains(row, f) {
				t.Errorf("row of %s lacks %q: %q", want[0], f, row)
			}
		}
	}
	if strings.Contains(table, "second line") {
		t.Errorf("last error is more than one line:\n%s", table)
	}
	if out, err := kubectl(t, cp, "wait", "-n", ns, "--for=condition=Ready", "module/alpha", "--timeout=30s"); err != nil {
		t.Fatalf("kubectl wait Ready: %v\n%s", err, out)
	}
	if out, err := kubectl(t, cp, "wait", "-n", ns, "--for=condition=Stalled", "module/beta", "--timeout=30s"); err != nil {
		t.Fatalf("kubectl wait Stalled: %v\n%s", err, out)
	}
	// beta recovers: its object follows
	mods.Update("beta", func(st *runstate.Module) { st.State, st.LastError = runstate.StateReady, "" })
	if out, err := kubectl(t, cp, "wait", "-n", ns, "--for=condition=Ready", "module/beta", "--timeout=30s"); err != nil {
		t.Fatalf("kubectl wait Ready after beta recovered: %v\n%s", err, out)
	}

	res := dynamic.NewForConfigOrDie(cp.Config).Resource(GVR).Namespace(ns)
	// a change to gamma rewrites gamma alone: alpha's object is not
	// written (the API server would take an unchanged update as a no-op,
	// so the writes are counted at the client)
	before := cc.count("alpha")
	setState(mods, map[string]runstate.Module{"gamma": {State: runstate.StateDisabled, DisabledReason: "no nodes of that kind"}})
	testwait.Until(t, "gamma's reason written", func() bool {
		o, err := res.Get(ctx, "gamma", metav1.GetOptions{})
		r, _, _ := unstructuredString(o, err, "status", "reason")
		return r == "no nodes of that kind"
	})
	if after := cc.count("alpha"); after != before {
		t.Fatalf("alpha's object was written %d times though alpha did not change", after-before)
	}

	// the reference Events are recorded on is the object's, UID and all
	// (kubectl describe selects Events by it)
	alpha, err := res.Get(ctx, "alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref, ok := kc.Ref("alpha"); !ok || ref.UID != alpha.GetUID() || ref.Namespace != ns || ref.Kind != "Module" || ref.APIVersion != "addonops.io/v1alpha1" {
		t.Fatalf("alpha's reference %+v (known %v), want the object's (uid %s)", ref, ok, alpha.GetUID())
	}

	// beta leaves the tree
	if err := trees.Transition(func(*runstate.Tree) (*runstate.Tree, error) { return tree("4567def", "alpha", "gamma"), nil }); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "beta's object to be deleted", func() bool {
		_, err := res.Get(ctx, "beta", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, ok := kc.Ref("beta"); ok {
		t.Fatal("a deleted object's reference is still known: its Events would hang on nothing")
	}
	testwait.Until(t, "alpha's object to name the new commit", func() bool {
		o, err := res.Get(ctx, "alpha", metav1.GetOptions{})
		c, _, _ := unstructuredString(o, err, "status", "commit")
		return c == "4567def"
	})
	cancel()
	<-done
}

func lineOf(lines []string, name string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

func unstructuredString(o interface {
	UnstructuredContent() map[string]any
}, err error, path ...string) (string, bool, error) {
	if err != nil {
		return "", false, err
	}
	return unstructured.NestedString(o.UnstructuredContent(), path...)
}

// countingClient counts the writes that reach the API server.
type countingClient struct {
	Client
	mu     sync.Mutex
	writes map[string]int
}

func (c *countingClient) Write(ctx context.Context, name string, st *Status) error {
	c.mu.Lock()
	c.writes[name]++
	c.mu.Unlock()
	return c.Client.Write(ctx, name, st)
}

func (c *countingClient) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes[name]
}
