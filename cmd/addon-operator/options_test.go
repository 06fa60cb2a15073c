package main

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addon-operator/lifecycle"
)

func TestLimitSettings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false}, {"16Mi", 16 << 20, false}, {"20000", 20000, false}, {"-1", -1, false},
		{"0", 0, true}, {"-5", 0, true}, {"lots", 0, true},
	} {
		got, err := parseSize(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseSize(%q) = %d, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"", lifecycle.PurgeHalf, false}, {"half", lifecycle.PurgeHalf, false}, {"0", lifecycle.PurgeNone, false},
		{"3", 3, false}, {"-1", 0, true}, {"many", 0, true},
	} {
		got, err := parsePurgeLimit(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parsePurgeLimit(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// TestOriginalNames: the original addon-operator's settings are aliases
// of ours, which win when both are set; each one used is noted for the
// start-up log.
func TestOriginalNames(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(o *startOptions) string // what is wrong, or ""
		notes []string                     // each must be in a note
	}{
		{
			name:  "ADDON_OPERATOR_MODULES_DIR",
			env:   map[string]string{"ADDON_OPERATOR_MODULES_DIR": "/a:/b"},
			check: func(o *startOptions) string { return want(o.op.ModulesDir, "/a:/b") },
			notes: []string{"env ADDON_OPERATOR_MODULES_DIR ours MODULES_DIR"},
		},
		{
			name:  "MODULES_DIR wins",
			env:   map[string]string{"ADDON_OPERATOR_MODULES_DIR": "/theirs", "MODULES_DIR": "/ours"},
			check: func(o *startOptions) string { return want(o.op.ModulesDir, "/ours") },
			notes: []string{"ignored: another name for it is set and wins env ADDON_OPERATOR_MODULES_DIR wins MODULES_DIR"},
		},
		{
			name:  "ADDON_OPERATOR_GLOBAL_HOOKS_DIR",
			env:   map[string]string{"ADDON_OPERATOR_GLOBAL_HOOKS_DIR": "/g"},
			check: func(o *startOptions) string { return want(o.op.GlobalHooksDir, "/g") },
			notes: []string{"env ADDON_OPERATOR_GLOBAL_HOOKS_DIR ours GLOBAL_HOOKS_DIR"},
		},
		{
			name: "KUBE_CONFIG, KUBE_CONTEXT, KUBE_SERVER",
			env:  map[string]string{"KUBE_CONFIG": "/kc", "KUBE_CONTEXT": "c", "KUBE_SERVER": "https://api:6443"},
			check: func(o *startOptions) string {
				return want(o.op.Kube, kubeOptions{Config: "/kc", Context: "c", Server: "https://api:6443"})
			},
			notes: []string{"env KUBE_CONFIG ours KUBECONFIG"},
		},
		{
			name:  "KUBECONFIG wins",
			env:   map[string]string{"KUBE_CONFIG": "/theirs", "KUBECONFIG": "/ours"},
			check: func(o *startOptions) string { return want(o.op.Kube.Config, "/ours") },
		},
		{
			name:  "--kube-config",
			args:  []string{"--kube-config", "/kc"},
			check: func(o *startOptions) string { return want(o.op.Kube.Config, "/kc") },
			notes: []string{"flag --kube-config ours --kubeconfig"},
		},
		{
			name:  "ADDON_OPERATOR_LISTEN_ADDRESS as a host and ADDON_OPERATOR_LISTEN_PORT",
			env:   map[string]string{"ADDON_OPERATOR_LISTEN_ADDRESS": "10.1.2.3", "ADDON_OPERATOR_LISTEN_PORT": "9650"},
			check: func(o *startOptions) string { return wantAddress(o.op.Listen, "10.1.2.3:9650") },
		},
		{
			name:  "--prometheus-listen-address and --prometheus-listen-port",
			args:  []string{"--prometheus-listen-address", "10.1.2.3", "--prometheus-listen-port", "9650"},
			check: func(o *startOptions) string { return wantAddress(o.op.Listen, "10.1.2.3:9650") },
			notes: []string{"flag --prometheus-listen-address ours --listen-address"},
		},
		{
			name:  "ADDON_OPERATOR_TMP_DIR",
			env:   map[string]string{"ADDON_OPERATOR_TMP_DIR": "/tmp/ao"},
			check: func(o *startOptions) string { return want(o.op.TempDir, "/tmp/ao") },
		},
		{
			name:  "RLOG_LOG_LEVEL",
			env:   map[string]string{"RLOG_LOG_LEVEL": "debug"},
			check: func(o *startOptions) string { return want(o.lg.Level, "debug") },
			notes: []string{"env RLOG_LOG_LEVEL ours LOG_LEVEL"},
		},
		{
			name:  "--debug",
			args:  []string{"--debug"},
			check: func(o *startOptions) string { return want(o.lg.Level, "debug") },
		},
		{
			name: "settings without an equivalent are accepted and noted",
			env:  map[string]string{"DEBUG_UNIX_SOCKET": "/run/ao.sock", "HELM_HISTORY_MAX": "3"},
			args: []string{"--debug-unix-socket", "/run/ao.sock", "--debug-keep-tmp-files=yes", "--debug-kubernetes-api",
				"--helm-timeout", "5m", "--prometheus-metrics-prefix=dev_", "--admission-server-enabled", "--namespace", "ns"},
			check: func(o *startOptions) string { return want(o.op.Namespace, "ns") },
			notes: []string{"flag --debug-unix-socket", "flag --debug-keep-tmp-files", "flag --debug-kubernetes-api",
				"flag --helm-timeout", "flag --prometheus-metrics-prefix", "flag --admission-server-enabled", "env HELM_HISTORY_MAX"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o, err := parseStart(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(o); msg != "" {
				t.Fatal(msg)
			}
			var notes []string
			for _, n := range o.notes {
				notes = append(notes, strings.TrimSpace(n.msg+" "+strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(n.args), "["), "]")))
			}
			for _, w := range tt.notes {
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, w) }) {
					t.Errorf("no note says %q; notes: %q", w, notes)
				}
			}
		})
	}
}

func want[T comparable](got, want T) string {
	if got != want {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	return ""
}

func wantAddress(o listenOptions, addr string) string {
	got, err := o.address()
	if err != nil {
		return err.Error()
	}
	return want(got, addr)
}

// The original's chroot for hooks is refused rather than ignored.
func TestShellChrootRefused(t *testing.T) {
	if _, err := parseStart([]string{"--shell-chroot-dir", "/chroot"}); err == nil || !strings.Contains(err.Error(), errChroot.Error()) {
		t.Fatalf("flag: err = %v", err)
	}
	t.Setenv("ADDON_OPERATOR_SHELL_CHROOT_DIR", "/chroot")
	if _, err := parseStart(nil); !errors.Is(err, errChroot) {
		t.Fatalf("env: err = %v", err)
	}
}

func TestListenAddress(t *testing.T) {
	tests := []struct {
		addr, port string
		want, url  string // want "" for an error
	}{
		{"", "", ":9115", "http://127.0.0.1:9115"},
		{"", "9650", ":9650", "http://127.0.0.1:9650"},
		{"0.0.0.0", "", "0.0.0.0:9115", "http://127.0.0.1:9115"},
		{"10.1.2.3", "", "10.1.2.3:9115", "http://10.1.2.3:9115"},
		{"10.1.2.3", "9650", "10.1.2.3:9650", "http://10.1.2.3:9650"},
		{"127.0.0.1:8080", "9650", "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{":8080", "", ":8080", "http://127.0.0.1:8080"},
		{"fd00::1", "9650", "[fd00::1]:9650", "http://[fd00::1]:9650"},
		{"[fd00::1]", "", "[fd00::1]:9115", "http://[fd00::1]:9115"},
		{"[::]:8080", "", "[::]:8080", "http://127.0.0.1:8080"},
		{"pod.example", "", "pod.example:9115", "http://pod.example:9115"},
		{"", "http", "", ""},
		{"", "70000", "", ""},
		{"host:port", "", "", ""},
		{"a:b:c", "", "", ""},
	}
	for _, tt := range tests {
		o := listenOptions{Address: tt.addr, Port: tt.port}
		got, err := o.address()
		url, uerr := o.url()
		if tt.want == "" {
			if err == nil || uerr == nil {
				t.Errorf("%q + port %q: %q, want an error", tt.addr, tt.port, got)
			}
			continue
		}
		if err != nil || got != tt.want || uerr != nil || url != tt.url {
			t.Errorf("%q + port %q: %q %v, %q %v; want %q, %q", tt.addr, tt.port, got, err, url, uerr, tt.want, tt.url)
		}
	}
}

func TestLogNoTime(t *testing.T) {
	for _, noTime := range []bool{false, true} {
		var buf strings.Builder
		lg := logOptions{Level: "info", Type: "json", NoTime: noTime}
		logger, err := lg.logger(&buf)
		if err != nil {
			t.Fatal(err)
		}
		logger.Info("hello")
		if hasTime := strings.Contains(buf.String(), `"time":`); hasTime == noTime {
			t.Errorf("LOG_NO_TIME=%v: %s", noTime, buf.String())
		}
	}
}

func TestParallelModulesSetting(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
		bad  bool
	}{
		{"", 2 * runtime.GOMAXPROCS(0), false}, {"1", 1, false}, {"4", 4, false}, {"0", 0, true}, {"-2", 0, true}, {"all", 0, true},
	} {
		t.Setenv("ADDON_OPERATOR_PARALLEL_MODULES", tc.env)
		var e env
		var o operatorOptions
		o.bind(pflag.NewFlagSet("start", pflag.ContinueOnError), &e)
		if bad := len(e.errs) > 0; bad != tc.bad || (!bad && o.ParallelModules != tc.want) {
			t.Errorf("ADDON_OPERATOR_PARALLEL_MODULES=%q: %d, %v", tc.env, o.ParallelModules, e.errs)
		}
	}
}

// --drift-sensitive-kinds is checked at parsing whatever --drift is: a
// bad list with drift off is an error, not a surprise when drift is
// turned on.
func TestDriftSensitiveKindsSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want []schema.GroupKind
		bad  bool
	}{
		{name: "unset", want: nil},
		{name: "flag", args: []string{"--drift-sensitive-kinds", "Vault,example.com/Token"},
			want: []schema.GroupKind{{Kind: "Vault"}, {Group: "example.com", Kind: "Token"}}},
		{name: "environment, drift off", env: "example.com/Token", args: []string{"--drift", "off"},
			want: []schema.GroupKind{{Group: "example.com", Kind: "Token"}}},
		{name: "bad flag, drift off", args: []string{"--drift", "off", "--drift-sensitive-kinds", "a/b/c"}, bad: true},
		{name: "bad environment, drift off", env: "example.com/", args: []string{"--drift=off"}, bad: true},
		{name: "bad flag, drift on", args: []string{"--drift-sensitive-kinds", "Secret Key"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ADDON_OPERATOR_DRIFT_SENSITIVE_KINDS", tc.env)
			o, err := parseStart(tc.args)
			if tc.bad {
				if err == nil || !strings.Contains(err.Error(), "--drift-sensitive-kinds") {
					t.Fatalf("err = %v, want a --drift-sensitive-kinds error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.op.driftSensitive, tc.want) {
				t.Errorf("kinds = %v, want %v", o.op.driftSensitive, tc.want)
			}
		})
	}
}
