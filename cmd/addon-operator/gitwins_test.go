package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// alphaOn is module alpha with value v, enabled.
func alphaOn(v string) map[string]string {
	files := moduleFiles("001-alpha", "alpha", v)
	files["modules/values.yaml"] = "alphaEnabled: true\n"
	return files
}

// alphaHook is module alpha's beforeHelm hook running body.
func alphaHook(body string) map[string]string {
	return map[string]string{"modules/001-alpha/hooks/h.sh": "#!/bin/sh\n" +
		`if [ "$1" = --config ]; then echo '{"beforeHelm": 1}'; exit 0; fi` + "\n" + body + "\n"}
}

// setRefTo runs `source set-ref ref` against the operator's namespace.
func setRefTo(t *testing.T, ns, ref string) {
	t.Helper()
	cmd := exec.Command(binPath, "source", "set-ref", ref)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE="+ns)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("set-ref %q: %v\n%s", ref, err, out)
	}
}

// hookErrors is addon_operator_hook_errors summed over its series.
func hookErrors(addr string) int {
	_, body := get(addr, "/metrics")
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "addon_operator_hook_errors{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// Git wins over a hook that fails on every run: a fix commit, a rollback
// by ref and a burst of commits while a slow hook runs each converge within
// 3 × ADDON_OPERATOR_RETRY_MAX plus the hook's time, and the commit on
// /status and on the release is the one whose files run.
func TestGitWinsOverFailingHook(t *testing.T) {
	const retryMax = 2 * time.Second
	const slow = 2 * time.Second
	// 3 × retryMax + hook time, plus a poll and a Helm upgrade on 2 shared cores
	bound := 3*retryMax + slow + 3*time.Second
	ns := namespace(t, "git-wins")
	root := t.TempDir()
	repo := newRepo(t, root)
	version := func(v, hook string) map[string]string { return merged(alphaOn(v), alphaHook(hook)) }
	good := commitFiles(t, repo, "good", version("1", "true"))
	if err := repo.Tag("good"); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(); err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	marks := t.TempDir()
	addr, _ := operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL="+srv.URL("addons"), "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"),
		"ADDON_OPERATOR_RETRY_MIN=1s", "ADDON_OPERATOR_RETRY_MAX="+retryMax.String(), "MARKS="+marks)
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })

	converges := func(what, v, commit string) {
		t.Helper()
		start := time.Now()
		eventually(t, what, func() bool {
			return cmValue(ns, "001-alpha-cm") == v && releaseCommit(ns, "alpha") == commit && status(t, addr)["revision"] == commit
		})
		if took := time.Since(start); took > bound {
			t.Fatalf("%s took %s, more than %s", what, took.Round(time.Millisecond), bound)
		} else {
			t.Logf("%s: %s", what, took.Round(time.Millisecond))
		}
	}
	breakHook := func(msg, v string) {
		t.Helper()
		before := hookErrors(addr)
		commitFiles(t, repo, msg, version(v, "exit 1"))
		eventually(t, "the hook failing twice", func() bool { return hookErrors(addr) >= before+2 })
	}

	// (a) a fix commit
	breakHook("broken", "2")
	fix := commitFiles(t, repo, "fix", version("3", "true"))
	converges("the fix commit", "3", fix)

	// (b) a rollback by ref while the hook fails
	breakHook("broken again", "4")
	setRefTo(t, ns, "good")
	converges("the rollback to the good tag", "1", good)

	// (c) three commits within a second while a slow hook runs
	setRefTo(t, ns, "")
	eventually(t, "the hook failing on main", func() bool { return status(t, addr)["revision"] != good })
	commitFiles(t, repo, "slow", version("5", `touch "$MARKS/slow"; sleep `+strconv.Itoa(int(slow.Seconds()))))
	eventually(t, "the slow hook running", func() bool { _, err := os.Stat(filepath.Join(marks, "slow")); return err == nil })
	var last string
	for i := 6; i <= 8; i++ {
		last = commitFiles(t, repo, "burst "+strconv.Itoa(i), version(strconv.Itoa(i), "true"))
	}
	converges("the last of three commits", "8", last)
}

// Restarted while the git server is down, with a checkout on disk: the
// operator answers /healthz at once, runs the revision on disk and keeps
// retrying git; once the server is back, a new commit is picked up.
func TestRestartWithGitDown(t *testing.T) {
	ns, repo, c1, srv, env := convergedOnDisk(t, "git-down")

	srv.Stop()
	start := time.Now()
	second := startOperator(t, env...)
	eventually(t, "/healthz", func() bool { code, _ := get(second.addr, "/healthz"); return code == http.StatusOK })
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("/healthz answered after %s", took)
	}
	eventually(t, "converged on the revision on disk", func() bool {
		code, _ := get(second.addr, "/readyz")
		return code == http.StatusOK && status(t, second.addr)["revision"] == c1
	})
	eventually(t, "git retried and the outage reported", func() bool {
		e := sourceError(t, second.addr)
		return e != ""
	})
	if c := releaseCommit(ns, "alpha"); c != c1 || cmValue(ns, "001-alpha-cm") != "1" {
		t.Fatalf("release after the restart: commit %q, value %q", c, cmValue(ns, "001-alpha-cm"))
	}

	c2 := commitFiles(t, repo, "alpha 2", moduleFiles("001-alpha", "alpha", "2"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alpha 2 once git is back", func() bool {
		return cmValue(ns, "001-alpha-cm") == "2" && status(t, second.addr)["revision"] == c2
	})
}

// A revision published by an earlier run whose schemas refuse the
// ConfigMap as it is now is not run after a restart: the previous
// revision on disk, which accepts it, runs instead, and the refusal is
// reported.
func TestRestartSkipsRefusedRevision(t *testing.T) {
	ns := namespace(t, "git-refused")
	root := t.TempDir()
	repo := newRepo(t, root)
	c1 := commitFiles(t, repo, "alpha 1, any config", alphaOn("1"))
	strict := moduleFiles("001-alpha", "alpha", "2")
	strict["modules/001-alpha/openapi/config-values.yaml"] = "type: object\nproperties:\n  v: {type: string}\n  x: {type: string}\n"
	c2 := commitFiles(t, repo, "alpha 2, x is a string", strict)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{"alpha": "x: a\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the first run publishes c1, then c2
	checkout := filepath.Join(t.TempDir(), "checkout")
	env := []string{"ADDON_OPERATOR_NAMESPACE=" + ns, "GIT_URL=file://" + repo.Bare, "GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR=" + checkout}
	first := startOperator(t, append(env, "GIT_REF="+c1)...)
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	setRefTo(t, ns, c2)
	eventually(t, "alpha 2", func() bool { return cmValue(ns, "001-alpha-cm") == "2" })
	first.stop(15 * time.Second)

	// while it is down, the ConfigMap changes into something c2 refuses
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "addon-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["alpha"] = "x: 5\n"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := startOperator(t, append(env, "GIT_REF="+c1)...)
	eventually(t, "c1 running again", func() bool {
		code, _ := get(second.addr, "/readyz")
		return code == http.StatusOK && status(t, second.addr)["revision"] == c1
	})
	eventually(t, "c2's refusal reported", func() bool {
		e := sourceError(t, second.addr)
		return strings.Contains(e, "refuse")
	})
	eventually(t, "the release back on c1", func() bool {
		return releaseCommit(ns, "alpha") == c1 && cmValue(ns, "001-alpha-cm") == "1"
	})
	select {
	case <-second.done:
		t.Fatalf("the operator exited: %v", second.err)
	default:
	}
}

// Restarted with a checkout on disk while the git server accepts
// connections and never answers: the revision on disk runs at once,
// without waiting on the remote at all (docs/git.md), and the hung sync is
// reported once it times out.
func TestRestartWithGitHanging(t *testing.T) {
	_, _, c1, srv, env := convergedOnDisk(t, "git-hang", "GIT_TIMEOUT=3s")

	// the same address now accepts and holds every connection silently
	u, _ := url.Parse(srv.URL("addons"))
	srv.Stop()
	hang, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hang.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()

	start := time.Now()
	second := startOperator(t, env...)
	eventually(t, "converged on the revision on disk", func() bool {
		code, _ := get(second.addr, "/readyz")
		return code == http.StatusOK && status(t, second.addr)["revision"] == c1
	})
	// before, start-up waited 5 s for the remote before it used the disk
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("ready on the revision on disk after %s", took)
	}
	eventually(t, "the hung sync reported", func() bool {
		e := sourceError(t, second.addr)
		return e != ""
	})
}

// convergedOnDisk runs an operator on a repository served over HTTP until
// alpha 1 is applied, then stops it, leaving that revision on disk; it
// returns the environment to start the next one with.
func convergedOnDisk(t *testing.T, name string, extraEnv ...string) (string, *gitserver.Repo, string, *gitserver.HTTPServer, []string) {
	t.Helper()
	ns := namespace(t, name)
	root := t.TempDir()
	repo := newRepo(t, root)
	c1 := commitFiles(t, repo, "alpha 1", alphaOn("1"))
	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	checkout := filepath.Join(t.TempDir(), "checkout")
	env := append([]string{"ADDON_OPERATOR_NAMESPACE=" + ns, "GIT_URL=" + srv.URL("addons"), "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR=" + checkout}, extraEnv...)
	first := startOperator(t, env...)
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	first.stop(15 * time.Second)
	return ns, repo, c1, srv, env
}
