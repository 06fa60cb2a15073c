package hookrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/internal/testwait"
)

// entries are the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Each run gets a directory no run had, with its result files empty;
// while run runs it is made ahead and removed after the run, and nothing
// is left once run returns.
func TestTempDirs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		running bool
		// cleaned: the directory made ahead is removed before it is taken
		cleaned bool
	}{
		{name: "in the run, without Run"},
		{name: "made ahead and removed after, with Run", running: true},
		{name: "a directory made ahead and removed since is replaced", running: true, cleaned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			d := newTempDirs(base)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			if tc.running {
				go func() { d.run(ctx); close(done) }()
				// ready, not the base's entries: a directory is listed
				// before its files are written into it (removing it then
				// raced with them: "directory not empty", 2 runs in 5)
				testwait.Until(t, "a directory made ahead", func() bool { return len(d.ready) == cap(d.ready) })
			} else {
				close(done)
			}
			if tc.cleaned {
				for _, name := range entries(t, base) {
					if err := os.RemoveAll(filepath.Join(base, name)); err != nil {
						t.Fatal(err)
					}
				}
			}
			seen := map[string]bool{}
			for range 5 {
				f, err := d.take()
				if err != nil {
					t.Fatal(err)
				}
				if seen[f.Dir] {
					t.Fatalf("%s handed out twice", f.Dir)
				}
				seen[f.Dir] = true
				for _, p := range f.resultFiles() {
					if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
						t.Fatalf("result file %s: %v %v", p, fi, err)
					}
				}
				// what a hook writes stays in its own directory
				if err := os.WriteFile(f.valuesPatch, []byte("[]"), 0o600); err != nil {
					t.Fatal(err)
				}
				d.release(f.Dir)
				if !tc.running {
					if _, err := os.Lstat(f.Dir); !os.IsNotExist(err) {
						t.Fatalf("%s not removed in the run: %v", f.Dir, err)
					}
				}
			}
			testwait.Until(t, "the used directories removed", func() bool {
				for _, name := range entries(t, base) {
					if seen[filepath.Join(base, name)] {
						return false
					}
				}
				return true
			})
			cancel()
			<-done
			if left := entries(t, base); len(left) != 0 {
				t.Fatalf("left in the temp dir after Run: %v", left)
			}
		})
	}
}
