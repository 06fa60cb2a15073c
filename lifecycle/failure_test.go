package lifecycle

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A failing hook's output may hold secrets: /status (and /queue) carry a
// one-line summary of its error, and only /debug, which answers on the
// operator's own host, has what it printed.
func TestStatusLeavesOutHookOutput(t *testing.T) {
	const secret = "password=hunter2"
	files := merged(map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n",
		"modules/001-alpha/hooks/fail.sh": "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\n" +
			"echo 'connecting with " + secret + "' >&2\nexit 3\n",
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	e := setup(t, files, nil)
	e.start()
	srv := httptest.NewServer(e.op.Handler(HTTPOptions{Namespace: e.ns}))
	t.Cleanup(srv.Close)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	e.eventually("alpha failed", func() bool {
		for _, m := range e.op.Status().Modules {
			if m.Name == "alpha" && m.State == StateFailed && m.LastError != "" {
				return true
			}
		}
		return false
	})
	status := get("/status")
	if strings.Contains(status, "hunter2") {
		t.Fatalf("/status serves the hook's output:\n%s", status)
	}
	if want := "hook 001-alpha/hooks/fail.sh (beforeHelm): exited 3"; !strings.Contains(status, want) {
		t.Fatalf("/status lacks %q:\n%s", want, status)
	}
	if q := get("/queue"); strings.Contains(q, "hunter2") {
		t.Fatalf("/queue serves the hook's output:\n%s", q)
	}
	var mods struct {
		Modules []DebugModule `json:"modules"`
	}
	if err := json.Unmarshal([]byte(get("/debug/modules")), &mods); err != nil {
		t.Fatal(err)
	}
	if len(mods.Modules) != 1 || !strings.Contains(mods.Modules[0].LastErrorOutput, secret) {
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
