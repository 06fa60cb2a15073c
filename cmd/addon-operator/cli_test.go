package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// executeOut runs one command line in-process and returns its exit code,
// stdout and stderr.
func executeOut(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := execute(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The root's help lists every command with its one line; help CMD and
// CMD --help show that command.
func TestHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		code, out, _ := executeOut(args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		for _, cmd := range []string{"start", "source", "render", "diff", "config", "module", "global", "queue", "hook", "version", "completion", "help"} {
			if !strings.Contains(out, "\n  "+cmd+" ") {
				t.Errorf("%v: no line for %q in\n%s", args, cmd, out)
			}
		}
		if !strings.Contains(out, "Examples:") {
			t.Errorf("%v: no examples", args)
		}
	}
	for _, args := range [][]string{{"help", "start"}, {"start", "--help"}, {"help", "module", "values"}, {"source", "status", "-h"}} {
		code, out, _ := executeOut(args...)
		if code != exitOK || !strings.Contains(out, "Usage:") {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	// start's help names the environment fallbacks and hides the original's aliases
	_, out, _ := executeOut("help", "start")
	for _, want := range []string{"--modules-dir", "env MODULES_DIR", "--git-url", "env GIT_URL", "--leader-election"} {
		if !strings.Contains(out, want) {
			t.Errorf("start --help lacks %q", want)
		}
	}
	for _, hidden := range []string{"--kube-config", "--helm-timeout", "--shell-chroot-dir"} {
		if strings.Contains(out, hidden+" ") {
			t.Errorf("start --help shows the original's %q", hidden)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_addon-operator addon-operator",
		"zsh":  "#compdef addon-operator",
		"fish": "complete -c addon-operator",
	} {
		code, out, errOut := executeOut("completion", shell)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, %q not in %d bytes; stderr %s", shell, code, want, len(out), errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := executeOut("version", "-o", "json")
	var b buildInfo
	if code != exitOK || json.Unmarshal([]byte(out), &b) != nil || b.Version == "" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Fatalf("version -o json: exit %d\n%s", code, out)
	}
	if code, out, _ := executeOut("version"); code != exitOK || !strings.HasPrefix(out, "addon-operator ") {
		t.Fatalf("version: exit %d %q", code, out)
	}
	if code, out, _ := executeOut("--version"); code != exitOK || !strings.HasPrefix(out, "addon-operator ") {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

// Usage mistakes exit 2 with the error and where the help is; the message
// names what was wrong.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"module"}, "needs a command: config, diff, list, render, values"},
		{[]string{"module", "bogus"}, `unknown command "module bogus" (commands of addon-operator module: config, diff, list, render, values)`},
		{[]string{"module", "values"}, "usage: addon-operator module values NAME"},
		{[]string{"module", "list", "-o", "xml"}, "-o xml: want table, json or yaml"},
		{[]string{"start", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"start", "extra"}, "takes no arguments"},
		{[]string{"diff"}, "usage: addon-operator diff --from REF"},
		{[]string{"source", "set-ref"}, "usage: addon-operator source set-ref REF"},
	}
	for _, tt := range tests {
		code, _, errOut := executeOut(tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errOut, tt.want)
		}
	}
}

// Long flags with one dash, as the standard flag package took them, still
// parse; one-letter shorthands stay shorthands.
func TestSingleDashLongFlags(t *testing.T) {
	o, err := parseStart([]string{"-namespace", "ns1", "-modules-dir=/m", "-debug"})
	if err != nil {
		t.Fatal(err)
	}
	if o.op.Namespace != "ns1" || o.op.ModulesDir != "/m" || o.lg.Level != "debug" {
		t.Fatalf("got namespace %q, modules dir %q, level %q", o.op.Namespace, o.op.ModulesDir, o.lg.Level)
	}
	root := newRootCmd(nil, nil)
	got := singleDashLongFlags(root, []string{"-o", "-ojson", "-g", "-address", "x", "--", "-namespace"})
	want := []string{"-o", "-ojson", "-g", "--address", "x", "--", "-namespace"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// With no cluster configured, start says what it tried and how to point it
// at one, and exits 1.
func TestNoClusterSaysWhatToDo(t *testing.T) {
	home := t.TempDir()
	code, _, errOut := cli(t, []string{"HOME=" + home, "KUBECONFIG=", "KUBE_CONFIG=", "KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT="})
	for _, want := range []string{"no Kubernetes cluster", "in-cluster config", "KUBECONFIG", home + "/.kube/config: not found", "--kubeconfig", "make run"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code != exitFailed {
		t.Fatalf("exit %d", code)
	}
}
