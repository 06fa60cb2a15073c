package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/internal/gitserver"
	"github.com/addonops/addon-operator/internal/testenv"
)

// plane is a control plane the binary runs against, with a client to it.
type plane struct {
	*testenv.ControlPlane
	Client kubernetes.Interface
}

// workloads is the control plane where pods start (kube-controller-manager,
// kube-scheduler and kwok with node testenv.NodeName), started by the first
// test that asks for it (workloadsPlane) and stopped by TestMain: the
// tests that do not need it do not pay its start.
var (
	workloads      *plane
	workloadsShare = testenv.Shared{
		Options: []testenv.Option{testenv.WithWorkloads()},
		Setup: func(c *testenv.ControlPlane) {
			workloads = &plane{ControlPlane: c, Client: kubernetes.NewForConfigOrDie(c.Config)}
		},
	}
)

// workloadsPlane is the control plane where Deployments roll out and
// become Available (docs/operator.md, "Health"). Its node is shared by
// the tests of this binary: a test that cordons it, or otherwise changes
// it, restores it before it ends.
func workloadsPlane(t testing.TB) *plane {
	t.Helper()
	start := time.Now()
	workloadsShare.Get(t)
	if d := time.Since(start); d > time.Second {
		t.Logf("control plane with workloads started in %s", d.Round(time.Millisecond))
	}
	return workloads
}

// namespace creates a namespace on the plane named after name, unique in
// this process.
func (p *plane) namespace(t testing.TB, name string) string {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, nsSeq.Add(1))
	if _, err := p.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// startOperatorOn runs the binary against p (its kubeconfig), listening on
// a free loopback address, until the test ends; env is added to the
// test's environment, as for startOperator.
func startOperatorOn(t testing.TB, p *plane, env ...string) *testOperator {
	t.Helper()
	addr := freeAddr(t)
	return runOperator(t, addr, []string{"start", "--listen-address", addr}, append([]string{"KUBECONFIG=" + p.KubeconfigPath}, env...))
}

// gitOperator is the binary in git mode on a plane, following main of a
// repository served over HTTP (internal/gitserver).
type gitOperator struct {
	NS    string          // the operator's namespace (its releases, ConfigMap, Events)
	Repo  *gitserver.Repo // commit to it (commitFiles) and the operator picks it up within 200ms
	First string          // the commit it started on
	Op    *testOperator
}

// startGitOperatorOn commits files to a new repository, serves it, and
// runs the binary against p in a new namespace named after name, polling
// main every 200ms; env is added (commit status settings, timeouts...).
func startGitOperatorOn(t testing.TB, p *plane, name string, files map[string]string, env ...string) *gitOperator {
	t.Helper()
	ns := p.namespace(t, name)
	root := t.TempDir()
	repo := newRepo(t, root)
	first := commitFiles(t, repo, "first", files)
	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	op := startOperatorOn(t, p, append([]string{"ADDON_OPERATOR_NAMESPACE=" + ns, "GIT_URL=" + srv.URL("addons"), "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR=" + filepath.Join(t.TempDir(), "checkout")}, env...)...)
	return &gitOperator{NS: ns, Repo: repo, First: first, Op: op}
}

// fixture reads testdata/name into the paths and contents of a commit.
func fixture(t testing.TB, name string) map[string]string {
	t.Helper()
	files := map[string]string{}
	base := filepath.Join("testdata", name)
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// runner is a func as testing.M's Run, to chain the planes' Mains.
type runner func() int

func (r runner) Run() int { return r() }
