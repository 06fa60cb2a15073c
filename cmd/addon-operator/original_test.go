package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// under moves moduleFiles' paths from modules/ to dir/.
func under(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for p, c := range files {
		out[dir+strings.TrimPrefix(p, "modules")] = c
	}
	return out
}

// twoContexts writes a kubeconfig whose current context is broken and
// whose context "real" reaches the test's API server.
func twoContexts(t *testing.T) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	real := kc.Contexts[kc.CurrentContext]
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Contexts["broken"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: real.AuthInfo}
	kc.Contexts["real"] = real
	kc.CurrentContext = "broken"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// cli runs the binary with env over the test's; it returns the exit code,
// stdout and stderr.
func cli(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestOriginalSettings runs the operator configured only through the
// original addon-operator's names (two modules directories, one module
// linked in from elsewhere, a bare listen host and a port, KUBE_CONFIG and
// KUBE_CONTEXT, and flags we have no use for), then asks it through every
// debug subcommand, found through the same settings.
func TestOriginalSettings(t *testing.T) {
	ns := namespace(t, "original")
	base := t.TempDir()
	writeFiles(t, base, merged(
		under("one", moduleFiles("001-alpha", "alpha", "1")),
		under("storage", moduleFiles("beta", "beta", "b")),
		map[string]string{
			"one/values.yaml":              "alphaEnabled: true\nbetaEnabled: true\n",
			"storage/beta/hooks/h.sh":      "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 2}'; fi\n",
			"global-hooks/startup.sh":      "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"onStartup\": 1}'; fi\n",
			"two/.keep":                    "",
			"global-hooks/openapi/.keep":   "",
			"storage/beta/templates/.keep": "",
		}))
	if err := os.Symlink(filepath.Join(base, "storage/beta"), filepath.Join(base, "two/002-beta")); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"},
		Data:       map[string]string{"global": "tier: dev\n", "alpha": "w: from-cm\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	env := []string{"ADDON_OPERATOR_NAMESPACE=" + ns,
		"ADDON_OPERATOR_MODULES_DIR=" + filepath.Join(base, "one") + ":" + filepath.Join(base, "two"),
		"ADDON_OPERATOR_GLOBAL_HOOKS_DIR=" + filepath.Join(base, "global-hooks"),
		"ADDON_OPERATOR_LISTEN_ADDRESS=" + host, "ADDON_OPERATOR_LISTEN_PORT=" + port,
		"ADDON_OPERATOR_TMP_DIR=" + filepath.Join(base, "tmp"), "HELM_HISTORY_MAX=3",
		// ours: the hand edit below stays for module diff (an edit is checked within seconds)
		"ADDON_OPERATOR_DRIFT=warn"}
	op := runOperator(t, addr, []string{"start", "--debug-unix-socket", "/run/addon-operator/debug.socket", "--debug-keep-tmp-files",
		"--helm-timeout=5m", "--kube-context", "real"}, append([]string{"KUBE_CONFIG=" + twoContexts(t)}, env...))
	eventually(t, "alpha and the linked beta installed", func() bool {
		return cmValue(ns, "001-alpha-cm") == "1" && cmValue(ns, "beta-cm") == "b"
	})
	logs, _ := os.ReadFile(op.log)
	for _, want := range []string{"env=ADDON_OPERATOR_MODULES_DIR ours=MODULES_DIR", "env=ADDON_OPERATOR_GLOBAL_HOOKS_DIR ours=GLOBAL_HOOKS_DIR",
		"env=KUBE_CONFIG ours=KUBECONFIG", "ignored: nothing here acts on it\" flag=--debug-unix-socket",
		"flag=--debug-keep-tmp-files", "flag=--helm-timeout", "env=HELM_HISTORY_MAX", "listen=" + addr,
		"web_view=http://" + addr + "/ui/"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if st, err := os.Stat(filepath.Join(base, "tmp")); err != nil || !st.IsDir() {
		t.Errorf("ADDON_OPERATOR_TMP_DIR not made: %v", err)
	}

	// an edit in the linked module's own directory reloads the tree
	writeFiles(t, base, map[string]string{"storage/beta/values.yaml": "beta:\n  v: \"b2\"\n"})
	eventually(t, "beta b2", func() bool { return cmValue(ns, "beta-cm") == "b2" })

	// a hand edit for module diff (drift in warn mode: reported, not corrected)
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "beta-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "hand"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}

	betaPath := filepath.Join(base, "two/002-beta")
	tests := []struct {
		args []string
		want []string // in stdout; a JSON answer is compared whole when it starts with {
	}{
		{[]string{"module", "list"}, []string{"NAME", "ORDER", "alpha", "beta", betaPath, "Ready"}},
		{[]string{"module", "list", "-o", "json"}, []string{`{"modules": [
			{"name": "alpha", "order": 1, "enabled": true, "state": "Ready", "health": "Healthy", "path": "` + filepath.Join(base, "one/001-alpha") + `"},
			{"name": "beta", "order": 2, "enabled": true, "state": "Ready", "health": "Healthy", "path": "` + betaPath + `"}]}`}},
		{[]string{"module", "list", "-o", "yaml"}, []string{"modules:\n- enabled: true", "name: beta"}},
		{[]string{"module", "values", "beta", "-o", "json"}, []string{`{"beta": {"v": "b2"}}`}},
		{[]string{"module", "values", "-g", "alpha", "--output=json"}, []string{`{"alpha": {"v": "1", "w": "from-cm"}, "global": {"tier": "dev", "enabledModules": ["alpha", "beta"]}}`}},
		{[]string{"module", "values", "alpha"}, []string{"alpha:\n  v: \"1\"\n  w: from-cm\n"}},
		{[]string{"module", "config", "alpha"}, []string{"alpha:\n  w: from-cm\n"}},
		{[]string{"module", "config", "alpha", "-g", "-o", "json"}, []string{`{"alpha": {"w": "from-cm"}, "global": {"tier": "dev"}}`}},
		{[]string{"module", "render", "beta"}, []string{"name: beta-cm", `v: "b2"`}},
		{[]string{"module", "diff", "beta"}, []string{"--- live/ConfigMap/" + ns + "/beta-cm", "+++ chart/ConfigMap/" + ns + "/beta-cm", "-  v: hand", "+  v: b2"}},
		{[]string{"global", "values", "-o", "json"}, []string{`{"global": {"tier": "dev"}}`}},
		{[]string{"global", "config"}, []string{"global:\n  tier: dev\n"}},
		{[]string{"queue", "list"}, []string{"QUEUE", "main", "(empty)"}},
		{[]string{"queue", "list", "-o", "json"}, []string{`"queues"`, `"name": "main"`}},
		{[]string{"queue", "list", "-o", "yaml"}, []string{"queues:", "name: main"}},
		{[]string{"hook", "list"}, []string{"HOOK", "startup.sh", "(global)", "onStartup(1)", "002-beta/hooks/h.sh", "beforeHelm(2)"}},
		{[]string{"hook", "list", "-o", "json"}, []string{`{"hooks": [
			{"name": "startup.sh", "bindings": [{"binding": "onStartup", "order": 1}]},
			{"name": "002-beta/hooks/h.sh", "module": "beta", "bindings": [{"binding": "beforeHelm", "order": 2}]}]}`}},
		{[]string{"hook", "list", "-o", "yaml"}, []string{"hooks:", "name: startup.sh"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := cli(t, env, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tt.want {
				if strings.HasPrefix(w, "{") {
					sameJSON(t, out, w)
				} else if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	// what cannot be answered: non-zero, and a message that says why
	closed := freeAddr(t)
	_, closedPort, _ := net.SplitHostPort(closed)
	failures := []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "ADDON_OPERATOR_LISTEN_PORT=" + closedPort}, []string{"module", "list"},
			"the operator is not reachable at http://" + closed + " (from ADDON_OPERATOR_LISTEN_ADDRESS)"},
		{[]string{"ADDON_OPERATOR_LISTEN_ADDRESS=" + closed}, []string{"global", "values"}, "not reachable at http://" + closed},
		{nil, []string{"hook", "list", "--address", "http://" + closed}, "not reachable at http://" + closed + " (from --address)"},
		{env, []string{"module", "values", "nope"}, `404 Not Found: module "nope" not found`},
		{env, []string{"module", "values"}, "usage: addon-operator module values NAME"},
		{env, []string{"global", "values", "-o", "table"}, "-o table: want json or yaml"},
		{env, []string{"module", "frobnicate"}, `unknown command "module frobnicate"`},
	}
	for _, tt := range failures {
		t.Run("fails: "+strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := cli(t, tt.env, tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q, want non-zero and %q (stdout %q)", code, errOut, tt.want, out)
			}
		})
	}
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %v", err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("got  %s\nwant %s", gb, wb)
	}
}

// TestSeveralModulesDirsGitMode: MODULES_DIR lists directories inside the
// repository; a module linked within them loads, one linked to a path
// that is not checked out is refused by name. `source status`, like the
// debug subcommands, finds the operator through the listen address it was
// started with.
func TestSeveralModulesDirsGitMode(t *testing.T) {
	ns := namespace(t, "git-dirs")
	root := t.TempDir()
	repo := newRepo(t, root)
	writeFiles(t, repo.Dir, merged(
		moduleFiles("001-alpha", "alpha", "1"),
		under("extra/.store", moduleFiles("beta", "beta", "b")),
		map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n"}))
	if err := os.Symlink(".store/beta", filepath.Join(repo.Dir, "extra/002-beta")); err != nil {
		t.Fatal(err)
	}
	c1 := commitFiles(t, repo, "two directories", nil)

	addr := freeAddr(t)
	env := []string{"ADDON_OPERATOR_NAMESPACE=" + ns, "ADDON_OPERATOR_LISTEN_ADDRESS=" + addr}
	runOperator(t, addr, []string{"start"}, append([]string{"KUBECONFIG=" + cp.KubeconfigPath, "GIT_URL=file://" + repo.Bare, "GIT_REF=main",
		"MODULES_DIR=modules:extra", "GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR=" + filepath.Join(t.TempDir(), "checkout")}, env...))
	eventually(t, "alpha and the linked beta installed", func() bool {
		return cmValue(ns, "001-alpha-cm") == "1" && cmValue(ns, "beta-cm") == "b"
	})

	code, out, errOut := cli(t, env, "source", "status")
	if code != 0 || !strings.Contains(out, "commit:       "+c1) {
		t.Fatalf("source status: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, env, "module", "list")
	if code != 0 || !strings.Contains(out, "extra/002-beta") {
		t.Fatalf("module list: exit %d\n%s%s", code, out, errOut)
	}

	// elsewhere/ is in the repository but in no listed directory: not
	// checked out, so the link to it is broken, and the revision refused
	writeFiles(t, repo.Dir, under("elsewhere", moduleFiles("gamma", "gamma", "g")))
	if err := os.Symlink("../elsewhere/gamma", filepath.Join(repo.Dir, "extra/003-gamma")); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, repo, "a link out of the checked-out paths", nil)
	refusedKeeping(t, addr, "the link reported", "extra/003-gamma: broken symlink (to ../elsewhere/gamma)", c1)
}

// TestRenderAbsoluteDirs: a preview of directories outside any repository,
// and a diff of a ref against a working copy named by absolute paths.
func TestRenderAbsoluteDirs(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, merged(
		under("one", moduleFiles("001-alpha", "alpha", "1")),
		under("storage", moduleFiles("beta", "beta", "b")),
		map[string]string{"one/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n", "two/.keep": ""}))
	if err := os.Symlink(filepath.Join(base, "storage/beta"), filepath.Join(base, "two/002-beta")); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir() // no repository here, and GIT_URL unset
	cmd := exec.Command(binPath, "render", "--modules-dir", filepath.Join(base, "one")+":"+filepath.Join(base, "two"),
		"--global-hooks-dir", filepath.Join(base, "global-hooks"))
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "GIT_URL=", "MODULES_DIR=", "GLOBAL_HOOKS_DIR=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# enabled modules: alpha, beta") || !strings.Contains(string(out), `v: "b"`) {
		t.Fatalf("render: %v\n%s", err, out)
	}

	repo := newRepo(t, t.TempDir())
	c1 := commitFiles(t, repo, "alpha 1", alphaOn("1"))
	writeFiles(t, repo.Dir, moduleFiles("001-alpha", "alpha", "edited"))
	cmd = exec.Command(binPath, "diff", "--repo", repo.Dir, "--from", c1, "--modules-dir", filepath.Join(repo.Dir, "modules"))
	cmd.Dir = cwd
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), `+  v: "edited"`) {
		t.Fatalf("diff: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}
