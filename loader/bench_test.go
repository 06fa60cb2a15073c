package loader

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/internal/benchtree"
)

func benchLoad(b *testing.B, cached, edit bool) {
	dir := b.TempDir()
	if err := benchtree.Generate(100, dir); err != nil {
		b.Skip(err)
	}
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	l := New(quiet)
	load := func(l *Loader) {
		if _, err := l.Load(b.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks")); err != nil {
			b.Fatal(err)
		}
	}
	if cached {
		load(l)
	}
	b.ResetTimer()
	for i := range b.N {
		if !cached {
			l = New(quiet)
		}
		if edit {
			// a chart edit in one module: its hook's --config runs again
			b.StopTimer()
			p := filepath.Join(dir, "modules", "001-mod-aa", "templates", "configmap.yaml")
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = fmt.Fprintf(f, "# %d\n", i)
			_ = f.Close()
			b.StartTimer()
		}
		load(l)
	}
}

// BenchmarkLoad100Cold loads the 100-module reference tree with an empty
// cache: every hook runs with --config.
func BenchmarkLoad100Cold(b *testing.B) { benchLoad(b, false, false) }

// BenchmarkLoad100Cached reloads it with every hook config cached.
func BenchmarkLoad100Cached(b *testing.B) { benchLoad(b, true, false) }

// BenchmarkLoad100ChartEdit reloads it after an edit to one module's
// chart: the hook config cache covers every file of the module
// (docs/operator.md, "How hooks run"), so that module's hook runs --config.
func BenchmarkLoad100ChartEdit(b *testing.B) { benchLoad(b, true, true) }
