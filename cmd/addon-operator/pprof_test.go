package main

import (
	"bytes"
	"net/http"
	"path/filepath"
	"testing"
)

// With --pprof the execution trace is served beside the CPU profile
// (docs/performance.md, "Where a module run's time goes"); without it,
// neither.
func TestPprofTrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pprof bool
	}{
		{"on", true},
		{"off", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "pprof-"+tc.name)
			dir := t.TempDir()
			writeFiles(t, dir, merged(moduleFiles("001-alpha", "alpha", "1"), map[string]string{
				"modules/values.yaml": "alphaEnabled: true\n", "global-hooks/.keep": "",
			}))
			env := []string{"ADDON_OPERATOR_NAMESPACE=" + ns, "ADDON_OPERATOR_MODULES_DIR=" + filepath.Join(dir, "modules"),
				"ADDON_OPERATOR_GLOBAL_HOOKS_DIR=" + filepath.Join(dir, "global-hooks")}
			if tc.pprof {
				env = append(env, "ADDON_OPERATOR_PPROF=true")
			}
			op := startOperator(t, env...)
			eventually(t, "alpha installed", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
			code, body := get(op.addr, "/debug/pprof/trace?seconds=1")
			// a trace starts with its header: "go 1.NN trace"
			got := code == http.StatusOK && bytes.HasPrefix([]byte(body), []byte("go 1."))
			if got != tc.pprof {
				t.Fatalf("/debug/pprof/trace: %d, %q…; want a trace: %v", code, body[:min(len(body), 20)], tc.pprof)
			}
		})
	}
}
