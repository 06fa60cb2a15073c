package lifecycle

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/internal/benchtree"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// BenchmarkHookRun compares one hook run started directly with os/exec
// against the same hook run by the operator (temp files, values JSON,
// environment, patch read-back and validation): the difference is the
// operator's overhead per hook run. "trivial" is a /bin/sh hook that does
// nothing; "reference" is a module's bash + jq beforeHelm hook of the
// 100-module reference tree, whose direct run is the floor of each of a
// re-converge's 101 hook runs.
func BenchmarkHookRun(b *testing.B) {
	trivial := b.TempDir()
	files := map[string]string{
		"modules/values.yaml":        "oneEnabled: true\none: {a: 1}\nglobal: {g: 1}\n",
		"modules/001-one/hooks/h.sh": "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\nexit 0\n",
	}
	for p, c := range files {
		full := filepath.Join(trivial, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	reference := b.TempDir()
	if err := benchtree.Generate(100, reference); err != nil {
		b.Fatal(err)
	}
	for _, tree := range []struct{ name, dir string }{{"trivial", trivial}, {"reference", reference}} {
		o, hook := hookBenchOperator(b, tree.dir)
		// the same files and environment the operator hands the hook,
		// written once
		files, err := o.run.PrepareRun(o.trees.Load().Store, o.trees.Load().Model.Module(hook.Module).Key, o.bind.OrderedContext(hook, loader.BeforeHelm))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(files.Dir) })
		env := append(os.Environ(), files.Env(hook)...)
		b.Run(tree.name+"/direct-exec", func(b *testing.B) {
			for range b.N {
				cmd := exec.Command(hook.Path)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatal(err, string(out))
				}
			}
		})
		b.Run(tree.name+"/operator", func(b *testing.B) {
			for range b.N {
				if _, err := o.run.RunHook(b.Context(), hook, loader.BeforeHelm, o.bind.OrderedContext(hook, loader.BeforeHelm), false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hookBenchOperator loads a tree into an operator (no API server: the
// ConfigMap lives in memory) with every module enabled, and returns it
// with the first module's first hook.
func hookBenchOperator(b *testing.B, dir string) (*Operator, *loader.Hook) {
	ld := loader.New(loader.WithLogger(quiet()))
	model, err := ld.Load(b.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
	if err != nil {
		b.Fatal(err)
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		b.Fatal(err)
	}
	o := New(Config{Logger: quiet()}, newFakeConfig(nil), nil, ld)
	o.trees.Start(&runstate.Tree{Model: model, Store: store})
	o.modules.Edit(func(_ map[string]*runstate.Module, enabled *[]string) {
		for _, m := range model.Modules {
			*enabled = append(*enabled, m.Name)
		}
	})
	return o, model.Modules[0].Hooks[0]
}
