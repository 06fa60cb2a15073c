package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/gitserver"
	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/kube"
)

var (
	cp      *testenv.ControlPlane
	client  kubernetes.Interface
	binPath string
)

var nsSeq atomic.Int64

func TestMain(m *testing.M) {
	dir, _ := os.MkdirTemp("", "addon-operator-bin-")
	binPath = filepath.Join(dir, "addon-operator")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does
	if p := os.Getenv("ADDON_OPERATOR_BENCH_BIN"); p != "" {
		// another build of the binary, to compare two commits with the
		// same benchmarks (docs/benchmarks.md)
		binPath = p
	} else if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	// the workloads plane (workloads_test.go) is stopped after the tests,
	// before the plain one
	code := testenv.Main(runner(func() int { return workloadsShare.Main(m) }), func(c *testenv.ControlPlane) {
		cp, client = c, kubernetes.NewForConfigOrDie(c.Config)
	})
	os.RemoveAll(dir)
	os.Exit(code)
}

// newRepo makes a repository named addons served from root, with a
// working copy to commit from.
func newRepo(t testing.TB, root string) *gitserver.Repo {
	t.Helper()
	repo, err := gitserver.NewRepo(root, "addons", filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// symlink makes link (and its directory) point at target, replacing
// whatever link was.
func symlink(t testing.TB, link, target string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// commitFiles is gitserver.Repo.CommitFiles that fails the test on error.
func commitFiles(t testing.TB, repo *gitserver.Repo, msg string, files map[string]string, remove ...string) string {
	t.Helper()
	sha, err := repo.CommitFiles(msg, files, remove...)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func moduleFiles(name, key, value string) map[string]string {
	return map[string]string{
		"modules/" + name + "/Chart.yaml":               "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"modules/" + name + "/values.yaml":              key + ":\n  v: \"" + value + "\"\n",
		"modules/" + name + "/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-cm\ndata:\n  v: {{ .Values." + key + ".v | quote }}\n",
	}
}

// operator runs the binary until the test ends; it returns the HTTP address
// and the log file.
func operator(t testing.TB, env ...string) (string, string) {
	t.Helper()
	op := startOperator(t, env...)
	return op.addr, op.log
}

// testOperator is the binary started by a test.
type testOperator struct {
	*process
	addr, log string
}

// startOperator runs the binary until the test ends (or it exits).
func startOperator(t testing.TB, env ...string) *testOperator {
	t.Helper()
	addr := freeAddr(t)
	return runOperator(t, addr, []string{"start", "--listen-address", addr}, append([]string{"KUBECONFIG=" + cp.KubeconfigPath}, env...))
}

// handedOut are the ports freeAddr gave: the kernel may offer a port
// again once its listener is closed, before the binary binds it (a test
// that asks for two addresses got the same one twice).
var handedOut sync.Map

// freeAddr is a loopback address with a free port, never one it gave
// before in this process.
func freeAddr(t testing.TB) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if _, given := handedOut.LoadOrStore(addr, true); !given {
			return addr
		}
	}
}

// runOperator runs the binary with args and env (over the test's own,
// with text logs and fast retries) until the test ends; it listens at addr.
func runOperator(t testing.TB, addr string, args, env []string) *testOperator {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), append([]string{"LOG_TYPE=text", "ADDON_OPERATOR_RETRY_MIN=100ms", "ADDON_OPERATOR_RETRY_MAX=500ms"}, env...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := startProcess(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop(15 * time.Second)
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("operator log (%s):\n%s", addr, b)
		}
	})
	return &testOperator{process: p, addr: addr, log: logPath}
}

// process is a started binary, waited for once.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // its exit status, once done is closed
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// eventually waits up to a minute for cond.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	within(t, 60*time.Second, what, cond)
}

// within polls cond until it holds, failing the test after d.
func within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get returns an endpoint's status code and body ("" when it cannot be reached).
func get(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sourceError is /status's source.lastError ("" for none).
func sourceError(t *testing.T, addr string) string {
	t.Helper()
	src, _ := status(t, addr)["source"].(map[string]any)
	e, _ := src["lastError"].(string)
	return e
}

// refusedKeeping waits for /status to report a refused revision whose
// error holds want, then checks that running is still the revision run.
func refusedKeeping(t *testing.T, addr, what, want, running string) {
	t.Helper()
	eventually(t, what, func() bool { return strings.Contains(sourceError(t, addr), want) })
	if cur := status(t, addr)["revision"]; cur != running {
		t.Fatalf("running revision = %v, want %s", cur, running)
	}
}

func status(t *testing.T, addr string) map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

func cmValue(ns, name string) string {
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["v"]
}

// namespace creates a namespace named after name, unique in this process
// (tests may run more than once against one control plane).
func namespace(t testing.TB, name string) string {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, nsSeq.Add(1))
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// helmClient reads the releases in ns.
func helmClient(t testing.TB, ns string) *kube.Helm {
	t.Helper()
	helm, err := kube.NewHelm(cp.Config, ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return helm
}

// releaseCommit is the commit recorded on the release name in ns ("" while
// there is none).
func releaseCommit(ns, name string) string {
	rel, err := helmtest.Last(cp.Config, ns, name)
	if err != nil {
		return ""
	}
	return rel.Labels[kube.LabelCommit]
}

func TestGitMode(t *testing.T) {
	ns := namespace(t, "git-mode")
	root := t.TempDir()
	repo := newRepo(t, root)
	files := moduleFiles("001-alpha", "alpha", "1")
	files["modules/values.yaml"] = "alphaEnabled: true\nbetaEnabled: true\n"
	c1 := commitFiles(t, repo, "alpha v1", files)

	srv, err := gitserver.StartHTTP(root, gitserver.WithBasicAuth("deployer", "pa55-word"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte("pa55-word"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, logPath := operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL="+srv.URL("addons"), "GIT_REF=main",
		"GIT_USERNAME=deployer", "GIT_PASSWORD_FILE="+pw, "GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"))
	eventually(t, "alpha v1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })

	helm := helmClient(t, ns)
	if got := releaseCommit(ns, "alpha"); got != c1 {
		t.Fatalf("release commit = %q, want %s", got, c1)
	}

	// a pushed commit that changes values upgrades the release
	c2 := commitFiles(t, repo, "alpha v2", moduleFiles("001-alpha", "alpha", "2"))
	eventually(t, "alpha v2", func() bool { return cmValue(ns, "001-alpha-cm") == "2" })
	eventually(t, "the commit recorded", func() bool { return releaseCommit(ns, "alpha") == c2 })
	eventually(t, "the revision metric", func() bool {
		_, body := get(addr, "/metrics")
		return strings.Contains(body, `addon_operator_git_revision_info{commit="`+c2+`",ref="main"} 1`)
	})

	// bad YAML: refused, the previous revision keeps running, the error is reported
	commitFiles(t, repo, "broken", map[string]string{"modules/001-alpha/values.yaml": "alpha: [\n"})
	refusedKeeping(t, addr, "the bad revision reported", "modules/001-alpha/values.yaml", c2)

	// fixed, and a new module added
	commitFiles(t, repo, "fix and add beta", merged(moduleFiles("001-alpha", "alpha", "3"), moduleFiles("002-beta", "beta", "b")))
	eventually(t, "beta installed", func() bool { return cmValue(ns, "002-beta-cm") == "b" })
	eventually(t, "alpha v3", func() bool { return cmValue(ns, "001-alpha-cm") == "3" })

	// a removed module directory is purged
	commitFiles(t, repo, "remove alpha", nil, "modules/001-alpha")
	eventually(t, "alpha purged", func() bool {
		ok, _ := helm.Has(context.Background(), "alpha")
		return !ok && cmValue(ns, "001-alpha-cm") == ""
	})

	// the server down: reported, the cluster keeps running; back up: picked up
	srv.Stop()
	eventually(t, "the outage reported", func() bool {
		e := sourceError(t, addr)
		return e != ""
	})
	commitFiles(t, repo, "beta c", moduleFiles("002-beta", "beta", "c"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "beta c after the outage", func() bool { return cmValue(ns, "002-beta-cm") == "c" })

	st, _ := json.Marshal(status(t, addr))
	logs, _ := os.ReadFile(logPath)
	if strings.Contains(string(st), "pa55-word") || strings.Contains(string(logs), "pa55-word") {
		t.Fatal("the password leaked into /status or the log")
	}
	src, _ := status(t, addr)["source"].(map[string]any)
	if h, _ := src["history"].([]any); len(h) < 4 {
		t.Fatalf("history = %v", src["history"])
	}
}

// writeFiles writes files (path → content) under dir, executable so
// that hooks run.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func merged(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// webhookBody is a push to main as a forge sends it.
const webhookBody = `{"ref":"refs/heads/main"}`

// postWebhook posts webhookBody to the operator at addr, signed with
// secret ("" sends it unsigned), and returns the status.
func postWebhook(tb testing.TB, addr, secret string) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/git", strings.NewReader(webhookBody))
	if err != nil {
		tb.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", gitsync.Sign([]byte(secret), []byte(webhookBody)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestGitWebhookAndRollback(t *testing.T) {
	ns := namespace(t, "git-webhook")
	root := t.TempDir()
	repo := newRepo(t, root)
	push := func(v string) string {
		t.Helper()
		return commitFiles(t, repo, "alpha "+v, alphaOn(v))
	}
	c1 := push("1")
	if err := repo.AnnotatedTag("v1", "first release"); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// polling is off in practice (1h): only the webhook can bring a change
	addr, _ := operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main",
		"GIT_POLL_INTERVAL=1h", "GIT_WEBHOOK_SECRET_FILE="+secretFile, "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"))
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })

	push("2")
	if code := postWebhook(t, addr, ""); code != http.StatusUnauthorized {
		t.Fatalf("unsigned webhook: %d", code)
	}
	if code := postWebhook(t, addr, "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("badly signed webhook: %d", code)
	}
	time.Sleep(500 * time.Millisecond)
	if v := cmValue(ns, "001-alpha-cm"); v != "1" {
		t.Fatalf("a refused webhook changed the cluster: %s", v)
	}
	start := time.Now()
	if code := postWebhook(t, addr, "s3cr3t"); code != http.StatusAccepted {
		t.Fatalf("signed webhook: %d", code)
	}
	eventually(t, "alpha 2 after the webhook", func() bool { return cmValue(ns, "001-alpha-cm") == "2" })
	t.Logf("push + webhook to release upgraded: %s", time.Since(start).Round(time.Millisecond))

	// roll back by pinning the tag
	cmd := exec.Command(binPath, "source", "set-ref", "v1")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE="+ns)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ref = v1") {
		t.Fatalf("set-ref: %v\n%s", err, out)
	}
	eventually(t, "rolled back to v1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	eventually(t, "status shows v1", func() bool {
		var out strings.Builder
		if err := sourceStatus([]string{"--address", "http://" + addr}, &out); err != nil {
			return false
		}
		s := out.String()
		return strings.Contains(s, "desired ref:  v1") && strings.Contains(s, "commit:       "+c1) && strings.Contains(s, "alpha 1")
	})
}

// The source ConfigMap's ref wins at start-up; removing it (set-ref ”)
// goes back to GIT_REF, not to the ref the ConfigMap held at start-up.
func TestSourceRefAtStartupAndReset(t *testing.T) {
	ns := namespace(t, "git-source-ref")
	root := t.TempDir()
	repo := newRepo(t, root)
	commitFiles(t, repo, "alpha 1", alphaOn("1"))
	if err := repo.Tag("v1"); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, repo, "alpha 2", moduleFiles("001-alpha", "alpha", "2"))
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator-source"}, Data: map[string]string{"ref": "v1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main",
		"GIT_POLL_INTERVAL=1h", "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"))
	eventually(t, "started on the ConfigMap's ref v1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })

	setRefTo(t, ns, "")
	eventually(t, "back on GIT_REF main", func() bool { return cmValue(ns, "001-alpha-cm") == "2" })
}
