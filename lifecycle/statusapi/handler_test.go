package statusapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// Every route on fake parts, from a local client: its code and what the
// body holds.
func TestRoutes(t *testing.T) {
	t.Parallel()
	h := New(options(t)).Handler()
	tests := []struct {
		path string
		code int
		want string // JSON the body equals, or text it contains
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "ok"},
		{"/queue", 200, "main"},
		{"/metrics", 200, "operator_gauge"},
		{"/metrics/hooks", 200, "hook_gauge"},
		{"/debug/modules", 200, `{"modules": [
			{"name": "web", "order": 1, "enabled": true, "state": "Failed", "path": "/tree/modules/001-web", "health": "Healthy",
			 "lastError": "hook 001-web/hooks/h.sh failed", "lastErrorOutput": "` + secretOutput + `"},
			{"name": "idle", "order": 2, "enabled": false, "state": "Disabled", "path": "/tree/modules/002-idle"}]}`},
		{"/debug/modules/web/values", 200, `{"web": {"password": "` + secretValue + `", "size": 3}}`},
		{"/debug/modules/web/values?global=true", 200, `{"web": {"password": "` + secretValue + `", "size": 3},
			"global": {"region": "eu", "tier": "prod", "enabledModules": ["web"]}}`},
		{"/debug/modules/web/config", 200, `{"web": {"size": 3}}`},
		{"/debug/modules/web/config?global=true", 200, `{"web": {"size": 3}, "global": {"tier": "prod"}}`},
		{"/debug/global/values", 200, `{"global": {"region": "eu", "tier": "prod"}}`},
		{"/debug/global/config", 200, `{"global": {"tier": "prod"}}`},
		{"/debug/hooks", 200, `{"hooks": [
			{"name": "start.sh", "bindings": [{"binding": "onStartup", "order": 1}]},
			{"name": "001-web/hooks/h.sh", "module": "web", "lastError": "exit status 1", "lastErrorOutput": "` + secretOutput + `", "bindings": [
				{"binding": "beforeHelm", "order": 5}, {"binding": "schedule", "name": "tick", "crontab": "0 * * * * *"},
				{"binding": "kubernetes", "name": "cms", "kind": "ConfigMap"}, {"binding": "kubernetesValidating", "name": "check"}]}]}`},
		{"/debug/modules/nope/values", 404, `module "nope" not found`},
		{"/debug/modules/nope/config", 404, `module "nope" not found`},
		{"/debug/modules/nope/render", 404, `module "nope" not found`},
		{"/debug/modules/idle/render", 404, `module "idle" has no chart`},
		{"/debug/modules/web/diff", 200, "+++ chart"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			code, body := getLocal(t, h, tt.path)
			if code != tt.code {
				t.Fatalf("status %d, want %d: %s", code, tt.code, body)
			}
			if strings.HasPrefix(tt.want, "{") {
				assertJSON(t, body, tt.want)
			} else if !strings.Contains(body, tt.want) {
				t.Fatalf("body lacks %q:\n%s", tt.want, body)
			}
		})
	}
}

// /status is Status marshalled beside Extra's fields, the status's own
// winning; a part with nothing to say leaves its field out.
func TestStatus(t *testing.T) {
	t.Parallel()
	code, body := getLocal(t, New(options(t)).Handler(), "/status")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	assertJSON(t, body, `{
		"ready": true, "revision": "abc123", "treeError": "", "source": {"commit": "abc123"},
		"modules": [
			{"name": "web", "enabled": true, "state": "Failed", "lastError": "hook 001-web/hooks/h.sh failed",
			 "health": {"status": "Healthy", "total": 0, "since": "0001-01-01T00:00:00Z"},
			 "drift": {"mode": "warn", "objects": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "fields": ["spec.replicas"]}]}},
			{"name": "idle", "enabled": false, "state": "Disabled"}],
		"queues": [{"name": "main", "tasks": []}],
		"watches": [],
		"bindings": [{"hook": "001-web/hooks/w.sh", "module": "web", "binding": "cms", "kind": "ConfigMap", "objects": 2}],
		"webhooks": {"bindings": ["check"]}}`)

	// before the first tree, without the optional parts
	opts := Options{Tree: &runstate.Trees{}, Modules: runstate.NewModules(), Queues: &runstate.Queues{},
		Revisions: fakeRevisions{treeErr: "tree refused", treeWhy: "TreeRefused", purgeErr: "purge refused"}}
	_, body = getLocal(t, New(opts).Handler(), "/status")
	assertJSON(t, body, `{"ready": false, "revision": "", "treeError": "tree refused", "treeReason": "TreeRefused",
		"purgeError": "purge refused", "modules": [], "queues": null, "watches": [], "bindings": []}`)
}

// Before Run and before the first convergence: /readyz and /queue say so,
// the debug routes answer 503, and diff without drift checks 404.
func TestStarting(t *testing.T) {
	t.Parallel()
	h := New(Options{Tree: &runstate.Trees{}, Modules: runstate.NewModules(), Queues: &runstate.Queues{}, Revisions: fakeRevisions{}}).Handler()
	tests := []struct {
		path string
		code int
		want string
	}{
		{"/readyz", http.StatusServiceUnavailable, "not converged yet"},
		{"/queue", http.StatusServiceUnavailable, "starting"},
		{"/debug/modules", http.StatusServiceUnavailable, "starting: no modules loaded yet"},
		{"/debug/hooks", http.StatusServiceUnavailable, "starting"},
		{"/debug/global/values", http.StatusServiceUnavailable, "starting"},
		{"/debug/modules/web/render", http.StatusServiceUnavailable, "starting"},
		{"/debug/modules/web/diff", http.StatusNotFound, "drift checks are off"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			code, body := getLocal(t, h, tt.path)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("%d %q, want %d %q", code, body, tt.code, tt.want)
			}
		})
	}
}

// driftcheck's sentinel errors are 404 with their message; any other
// error of a diff is 500.
func TestDiffErrorCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		code int
	}{
		{driftcheck.ErrNoDetector, http.StatusNotFound},
		{fmt.Errorf("module %q %w", "web", driftcheck.ErrUnknownModule), http.StatusNotFound},
		{fmt.Errorf("module %q %w", "web", driftcheck.ErrNotDeployed), http.StatusNotFound},
		{errBoom, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			t.Parallel()
			opts := options(t)
			opts.Drift = fakeDrift{diffErr: tt.err}
			code, body := getLocal(t, New(opts).Handler(), "/debug/modules/web/diff")
			if code != tt.code || strings.TrimSpace(body) != tt.err.Error() {
				t.Fatalf("%d %q, want %d %q", code, body, tt.code, tt.err)
			}
		})
	}
}

// The /debug routes answer only the operator's own host: a client
// elsewhere gets 403 and nothing of the values or hooks' output; the
// routes outside the guard never show them (docs/security.md, "Who sees
// what").
func TestDebugGuard(t *testing.T) {
	t.Parallel()
	h := New(options(t)).Handler()
	debug := []string{"/debug/modules", "/debug/modules/web/values?global=true", "/debug/modules/web/config", "/debug/modules/web/render",
		"/debug/modules/web/diff", "/debug/global/values", "/debug/global/config", "/debug/hooks"}
	for _, path := range debug {
		t.Run("elsewhere "+path, func(t *testing.T) {
			t.Parallel()
			code, body := get(t, h, path, otherPod, serverAddr)
			if code != http.StatusForbidden || strings.Contains(body, secretValue) || strings.Contains(body, secretOutput) {
				t.Fatalf("%d %q, want 403 without values or output", code, body)
			}
		})
	}
	for _, path := range []string{"/status", "/queue", "/metrics", "/metrics/hooks", "/readyz", "/healthz"} {
		t.Run("open "+path, func(t *testing.T) {
			t.Parallel()
			code, body := get(t, h, path, otherPod, serverAddr)
			if code != http.StatusOK || strings.Contains(body, secretValue) || strings.Contains(body, secretOutput) {
				t.Fatalf("%d, shows a value or hook output:\n%s", code, body)
			}
		})
	}
}

// LocalOnly: loopback to loopback, or the pod to its own address, by IP
// or localhost; not another pod, a sidecar's delivery from loopback to
// the pod's IP, or a name rebound to 127.0.0.1.
func TestLocalOnly(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	h := LocalOnly(ok)
	tests := []struct {
		name                string
		remote, local, host string
		code                int
	}{
		{"loopback", "127.0.0.1:40000", "127.0.0.1:9115", "127.0.0.1:9115", http.StatusOK},
		{"loopback by name", "127.0.0.1:40000", "127.0.0.1:9115", "localhost:9115", http.StatusOK},
		{"loopback v6", "[::1]:40000", "[::1]:9115", "[::1]:9115", http.StatusOK},
		{"the pod to its own IP", "10.1.2.3:40000", "10.1.2.3:9115", "10.1.2.3:9115", http.StatusOK},
		{"another pod", "10.1.2.4:40000", "10.1.2.3:9115", "10.1.2.3:9115", http.StatusForbidden},
		{"no local address", "10.1.2.4:40000", "", "10.1.2.3:9115", http.StatusForbidden},
		{"a sidecar's delivery", "127.0.0.6:40000", "10.1.2.3:9115", "10.1.2.3:9115", http.StatusForbidden},
		{"a rebound name", "127.0.0.1:40000", "127.0.0.1:9115", "attacker.example:9115", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, body := serve(t, h, "/debug/modules", tt.remote, tt.local, tt.host)
			if code != tt.code {
				t.Fatalf("status %d, want %d: %s", code, tt.code, body)
			}
		})
	}
}

// assertJSON compares a body with the JSON it should equal.
func assertJSON(t *testing.T, body, want string) {
	t.Helper()
	var got, w any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the test's JSON: %v", err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("got\n%s\nwant\n%s", g, want)
	}
}
