package lifecycle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// memBackend is a ConfigMap backend in memory: the edge of this benchmark.
type memBackend struct{ data map[string]string }

func (m *memBackend) Get(context.Context) (map[string]string, error) { return m.data, nil }
func (m *memBackend) Update(_ context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, error) {
	next, err := fn(m.data)
	if err == nil {
		m.data = next
	}
	return next, err
}
func (m *memBackend) Watch(ctx context.Context, _ func(map[string]string)) { <-ctx.Done() }

var _ ConfigBackend = (*memBackend)(nil)

// BenchmarkHookRun compares one run of a trivial hook started directly
// with os/exec against the same hook run by the operator (temp files,
// values JSON, environment, patch read-back): the difference is the
// operator's overhead per hook run.
func BenchmarkHookRun(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{
		"modules/values.yaml":        "oneEnabled: true\none: {a: 1}\nglobal: {g: 1}\n",
		"modules/001-one/hooks/h.sh": "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\nexit 0\n",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	ld := loader.New(loader.WithLogger(quiet()))
	model, err := ld.Load(b.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
	if err != nil {
		b.Fatal(err)
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		b.Fatal(err)
	}
	o := New(Config{Logger: quiet()}, &memBackend{data: map[string]string{}}, nil, ld)
	o.model, o.store, o.enabledModules = model, store, []string{"one"}
	hook := model.Modules[0].Hooks[0]

	b.Run("direct-exec", func(b *testing.B) {
		for range b.N {
			if err := exec.Command(hook.Path).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("operator", func(b *testing.B) {
		for range b.N {
			if _, err := o.runHook(b.Context(), hook, loader.BeforeHelm, o.orderedContext(hook, loader.BeforeHelm), false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
