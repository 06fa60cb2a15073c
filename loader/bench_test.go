package loader

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/internal/benchtree"
)

func benchLoad(b *testing.B, cached bool) {
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
	for range b.N {
		if !cached {
			l = New(quiet)
		}
		load(l)
	}
}

// BenchmarkLoad100Cold loads the 100-module reference tree with an empty
// cache: every hook runs with --config.
func BenchmarkLoad100Cold(b *testing.B) { benchLoad(b, false) }

// BenchmarkLoad100Cached reloads it with every hook config cached.
func BenchmarkLoad100Cached(b *testing.B) { benchLoad(b, true) }
