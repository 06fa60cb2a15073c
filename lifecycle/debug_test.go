package lifecycle

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDebugEndpoints: what the CLI's debug subcommands read, against a
// converged operator with a real API server and Helm.
func TestDebugEndpoints(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, merged(
		map[string]string{
			"modules/values.yaml":          "echoEnabled: true\nidleEnabled: false\nglobal: {region: eu}\n",
			"modules/020-idle/values.yaml": "idle: {}\n",
			"modules/010-echo/values.yaml": "echo: {size: 1}\n",
			"modules/010-echo/hooks/h.sh":  "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 5, \"schedule\": [{\"name\": \"tick\", \"crontab\": \"0 0 * * * *\"}]}'; fi\n",
			"global-hooks/start.sh":        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"onStartup\": 1}'; fi\n",
		},
		withPrefix("modules/010-echo", moduleChart("echo", "echo")),
	), map[string]string{"echo": "size: 3\n", "global": "tier: prod\n"})
	e.start()
	e.waitReady()
	get := serveHandler(t, e.op.Handler(HTTPOptions{Namespace: e.ns}))
	tests := []struct {
		path string
		code int
		want string // JSON to compare, or text the body contains
	}{
		{"/debug/modules", 200, `{"modules": [
			{"name": "echo", "order": 10, "enabled": true, "state": "Ready", "path": "` + e.dir + `/modules/010-echo"},
			{"name": "idle", "order": 20, "enabled": false, "state": "Disabled", "path": "` + e.dir + `/modules/020-idle"}]}`},
		{"/debug/modules/echo/values", 200, `{"echo": {"size": 3}}`},
		{"/debug/modules/echo/values?global=true", 200, `{"echo": {"size": 3}, "global": {"region": "eu", "tier": "prod", "enabledModules": ["echo"]}}`},
		{"/debug/modules/echo/config", 200, `{"echo": {"size": 3}}`},
		{"/debug/modules/echo/config?global=true", 200, `{"echo": {"size": 3}, "global": {"tier": "prod"}}`},
		{"/debug/global/values", 200, `{"global": {"region": "eu", "tier": "prod"}}`},
		{"/debug/global/config", 200, `{"global": {"tier": "prod"}}`},
		{"/debug/hooks", 200, `{"hooks": [
			{"name": "start.sh", "bindings": [{"binding": "onStartup", "order": 1}]},
			{"name": "010-echo/hooks/h.sh", "module": "echo", "bindings": [
				{"binding": "beforeHelm", "order": 5}, {"binding": "schedule", "name": "tick", "crontab": "0 0 * * * *"}]}]}`},
		{"/debug/modules/echo/render", 200, `name: echo-values`},
		{"/debug/modules/nope/values", 404, `module "nope" not found`},
		{"/debug/modules/idle/render", 404, `module "idle" has no chart`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(tt.path)
			if code != tt.code {
				t.Fatalf("status %d, want %d: %s", code, tt.code, body)
			}
			if strings.HasPrefix(tt.want, "{") {
				var v any
				if err := json.Unmarshal([]byte(body), &v); err != nil {
					t.Fatalf("%v: %s", err, body)
				}
				assertJSON(t, v, tt.want)
			} else if !strings.Contains(body, tt.want) {
				t.Fatalf("body lacks %q:\n%s", tt.want, body)
			}
		})
	}

	// render shows what the release holds: the chart with the current values
	_, manifest := get("/debug/modules/echo/render")
	cm, err := client.CoreV1().ConfigMaps(e.ns).Get(t.Context(), "echo-values", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["values"] != `{"size":3}` || !strings.Contains(manifest, `values: "{\"size\":3}"`) {
		t.Fatalf("render:\n%s\nthe release's values: %s", manifest, cm.Data["values"])
	}
}

// serveHandler serves h on loopback until the test ends and returns a GET
// of a path: its status code and body.
func serveHandler(t *testing.T, h http.Handler) func(path string) (int, string) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
