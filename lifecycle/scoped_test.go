package lifecycle

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const scopedModuleHook = `{"onStartup": 1, "beforeHelm": 1, "afterHelm": 1, "afterDeleteHelm": 1}`

func scopedModules() map[string]string {
	return merged(map[string]string{
		"modules/values.yaml":          "global:\n  g: 1\nalphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n",
		"global-hooks/g.sh":            recordingHook("g", `{"beforeAll": 1, "afterAll": 1}`, ""),
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", scopedModuleHook, ""),
		"modules/002-beta/hooks/b.sh":  recordingHook("beta", scopedModuleHook, ""),
		"modules/003-gamma/hooks/c.sh": recordingHook("gamma", scopedModuleHook, ""),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")), withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")))
}

// A tree change inside one module's directory runs that module and the
// afterAll hooks, nothing else; a change outside modules, or one that
// changes which modules are enabled, reloads all modules.
func TestModuleScopedReloads(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, scopedModules(), nil)
	e.start()
	e.waitReady()
	write := func(p, c string, mode os.FileMode) {
		if mode&0o100 != 0 {
			c = withRecordFile(e.dir, c)
		}
		if err := os.WriteFile(filepath.Join(e.dir, p), []byte(c), mode); err != nil {
			t.Error(err)
		}
	}
	reloadAll := []string{"g:beforeAll", "alpha:beforeHelm", "alpha:afterHelm", "beta:beforeHelm", "beta:afterHelm", "gamma:beforeHelm", "gamma:afterHelm", "g:afterAll"}
	for _, tc := range []struct {
		name string
		edit func()
		want []string
	}{{
		name: "values of one module",
		edit: func() { write("modules/002-beta/values.yaml", "beta:\n  answer: 42\n", 0o644) },
		want: []string{"beta:beforeHelm", "beta:afterHelm", "g:afterAll"},
	}, {
		name: "a hook of one module",
		edit: func() {
			write("modules/003-gamma/hooks/c.sh", recordingHook("gamma", scopedModuleHook, "# changed"), 0o755)
		},
		want: []string{"gamma:onStartup", "gamma:beforeHelm", "gamma:afterHelm", "g:afterAll"},
	}, {
		name: "two modules",
		edit: func() {
			write("modules/001-alpha/values.yaml", "alpha:\n  answer: 1\n", 0o644)
			write("modules/003-gamma/values.yaml", "gamma:\n  answer: 3\n", 0o644)
		},
		want: []string{"alpha:beforeHelm", "alpha:afterHelm", "gamma:beforeHelm", "gamma:afterHelm", "g:afterAll"},
	}, {
		name: "modules/values.yaml",
		edit: func() {
			write("modules/values.yaml", "global:\n  g: 2\nalphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n", 0o644)
		},
		want: reloadAll,
	}, {
		name: "a global hook",
		edit: func() {
			write("global-hooks/g.sh", recordingHook("g", `{"beforeAll": 1, "afterAll": 1}`, "# changed"), 0o755)
		},
		want: reloadAll,
	}, {
		// a module-only change that disables it: discovery sees a new
		// enabled set, and the whole reload runs (gamma is deleted)
		name: "a module's enabled flag",
		edit: func() { write("modules/003-gamma/values.yaml", "gammaEnabled: false\n", 0o644) },
		want: []string{"g:beforeAll", "alpha:beforeHelm", "alpha:afterHelm", "beta:beforeHelm", "beta:afterHelm", "gamma:afterDeleteHelm", "g:afterAll"},
	}} {
		base := len(e.readRecords())
		tc.edit()
		e.op.TreeChanged(Revision{})
		e.eventually(tc.name+" to converge", func() bool {
			got := e.sequence()[base:]
			return len(got) > 0 && got[len(got)-1] == "g:afterAll"
		})
		e.idle()
		if got := e.sequence()[base:]; !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: hook runs\n got  %v\n want %v", tc.name, got, tc.want)
		}
	}
	if v := e.releaseValues("beta"); v["answer"] != 42.0 {
		t.Fatalf("beta's release values = %v", v)
	}
	if e.hasRelease("gamma") {
		t.Fatal("gamma's release stayed after it was disabled")
	}
}
