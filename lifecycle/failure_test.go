package lifecycle

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A failing hook's output may hold secrets: /status (and /queue) carry a
// one-line summary of its error, and only /debug, which answers on the
// operator's own host, has what it printed.
func TestStatusLeavesOutHookOutput(t *testing.T) {
	t.Parallel()
	const secret = "password=hunter2"
	files := merged(map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n",
		"modules/001-alpha/hooks/fail.sh": "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\n" +
			"echo 'connecting with " + secret + "' >&2\nexit 3\n",
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	e := parallelSetup(t, files, nil)
	e.start()
	serve := serveHandler(t, e.op.Handler(HTTPOptions{Namespace: e.ns}))
	get := func(path string) string {
		t.Helper()
		code, body := serve(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		return body
	}
	// the module is retried, and a retry in progress shows no error: read
	// the endpoints while it is Failed
	const want = "hook 001-alpha/hooks/fail.sh (beforeHelm): exited 3" // on /status
	var status string
	var mods struct {
		Modules []DebugModule `json:"modules"`
	}
	e.eventually("alpha failed, on /status and /debug/modules", func() bool {
		var code int
		if code, status = serve("/status"); code != http.StatusOK {
			return false
		}
		code, body := serve("/debug/modules")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &mods) != nil {
			return false
		}
		return strings.Contains(status, want) && len(mods.Modules) == 1 && mods.Modules[0].State == StateFailed
	})
	if strings.Contains(status, "hunter2") {
		t.Fatalf("/status serves the hook's output:\n%s", status)
	}
	if q := get("/queue"); strings.Contains(q, "hunter2") {
		t.Fatalf("/queue serves the hook's output:\n%s", q)
	}
	if !strings.Contains(mods.Modules[0].LastErrorOutput, secret) {
		t.Fatalf("/debug/modules: %+v; want the hook's output", mods.Modules)
	}
	var hooks struct {
		Hooks []DebugHook `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(get("/debug/hooks")), &hooks); err != nil {
		t.Fatal(err)
	}
	if len(hooks.Hooks) != 1 || !strings.Contains(hooks.Hooks[0].LastErrorOutput, secret) || hooks.Hooks[0].LastError == "" {
		t.Fatalf("/debug/hooks: %+v; want the hook's last error and output", hooks.Hooks)
	}
}
