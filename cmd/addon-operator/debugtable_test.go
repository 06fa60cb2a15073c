package main

import (
	"strings"
	"testing"
)

// `module list` shows a module's readiness (its readiness hook's last
// answer) and, in the last column, why it failed, is disabled (its enabled
// script's reason) or is not ready.
func TestModuleListReadinessAndReasons(t *testing.T) {
	body := `{"modules":[
	 {"name":"probed","order":1,"enabled":true,"state":"Ready","path":"/m/001-probed",
	  "readiness":{"ready":false,"message":"execute: database is not reachable","error":"hook x (s): exited 1","checked":"2026-01-01T00:00:00Z"}},
	 {"name":"fine","order":2,"enabled":true,"state":"Ready","path":"/m/002-fine","readiness":{"ready":true,"checked":"2026-01-01T00:00:00Z"}},
	 {"name":"off","order":3,"enabled":false,"state":"Disabled","path":"/m/003-off","disabledReason":"needs a GPU node"},
	 {"name":"broken","order":4,"enabled":true,"state":"Failed","path":"/m/004-broken","lastError":"hook y (beforeHelm): exited 2"},
	 {"name":"silent","order":5,"enabled":true,"state":"Ready","path":"/m/005-silent","readiness":{"ready":false,"error":"hook z (s): exited 1","checked":"2026-01-01T00:00:00Z"}}]}`
	var out strings.Builder
	if err := modulesTable(&out, []byte(body)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if h := strings.Fields(lines[0]); len(h) < 6 || h[4] != "HEALTH" || h[5] != "READY" {
		t.Fatalf("header %q: want HEALTH fifth and READY sixth", lines[0])
	}
	want := map[string][]string{
		"probed": {"false", "not ready: execute: database is not reachable"},
		"fine":   {"true"},
		"off":    {"-", "disabled: needs a GPU node"},
		"broken": {"-", "hook y (beforeHelm): exited 2"},
		"silent": {"false", "not ready: hook z (s): exited 1"},
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		w := want[f[0]]
		if f[5] != w[0] || (len(w) > 1 && !strings.HasSuffix(l, w[1])) || (len(w) == 1 && len(f) != 7) {
			t.Errorf("row %q: want READY %q and %q last", l, w[0], w[1:])
		}
	}
}
