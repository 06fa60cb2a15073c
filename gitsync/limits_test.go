package gitsync

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// A commit over a limit is refused with an error naming the path and the
// limit, and the previous revision stays; the same commit passes with the
// default limits.
func TestLimitsRefuseTheRevision(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		limits Options[any]
		files  map[string]string
		want   []string
	}{
		{name: "a file over MaxFileSize", limits: Options[any]{MaxFileSize: 100},
			files: map[string]string{"modules/big.yaml": strings.Repeat("x", 101)},
			want:  []string{"modules/big.yaml", "101 B", "100 B"}},
		{name: "more entries than MaxFiles", limits: Options[any]{MaxFiles: 6},
			files: map[string]string{"modules/a.yaml": "a", "modules/b.yaml": "b", "modules/c.yaml": "c"},
			want:  []string{"modules/", "6 files, symlinks and directories"}},
		{name: "a checkout over MaxCheckoutSize", limits: Options[any]{MaxCheckoutSize: 1000},
			files: map[string]string{"modules/a.yaml": strings.Repeat("a", 600), "modules/b.yaml": strings.Repeat("b", 600)},
			want:  []string{"modules/", "1000 B"}},
	}
	var previous []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.limits
			opts.URL, opts.Ref, opts.CheckoutDir = f.http.URL("addons"), "main", filepath.Join(t.TempDir(), "c")
			opts.Auth = Auth{Username: "alice", PasswordFile: f.passFile}
			opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			s, err := New(opts)
			must(t, err)
			first, _, err := s.Sync(t.Context())
			must(t, err)
			var gone []string // the previous case's files this one does not write
			for _, p := range previous {
				if _, ok := tt.files[p]; !ok {
					gone = append(gone, p)
				}
			}
			f.commit(t, tt.name, tt.files, gone...)
			previous = previous[:0]
			for p := range tt.files {
				previous = append(previous, p)
			}
			_, changed, err := s.Sync(t.Context())
			if err == nil || changed {
				t.Fatalf("over the limit: changed = %v, err = %v", changed, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("the error does not say %q: %v", w, err)
				}
			}
			if s.Current().Commit != first.Commit {
				t.Fatal("the current revision moved")
			}
			if _, _, err := f.syncer(t, f.http.URL("addons"), "main", opts.Auth).Sync(t.Context()); err != nil {
				t.Fatalf("refused with the default limits: %v", err)
			}
		})
	}
}

// TestHelperRefusedSync is the child process of
// TestHugeBlobIsRefusedInBoundedMemory: one sync, whose outcome it prints.
func TestHelperRefusedSync(t *testing.T) {
	url := os.Getenv("HELPER_REFUSED_URL")
	if url == "" {
		return // not a child: nothing to do
	}
	s, err := New(Options[any]{URL: url, Ref: "main", CheckoutDir: os.Getenv("HELPER_REFUSED_DIR"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rev, _, err := s.Sync(t.Context())
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println("published:", rev.Commit)
}

// A 256 MiB blob of zeros (a pack of a few hundred KiB) is refused with the
// default limits, naming its path and the limit, and the sync's peak RSS
// stays far below the blob's size.
func TestHugeBlobIsRefusedInBoundedMemory(t *testing.T) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("needs /usr/bin/time (make deps)")
	}
	f := newFixture(t)
	// git streams a blob over this size into a pack instead of reading it whole
	_, err := f.repo.Git("config", "core.bigFileThreshold", "1m")
	must(t, err)
	big := filepath.Join(f.repo.Dir, "modules/big/zeros.bin")
	must(t, os.MkdirAll(filepath.Dir(big), 0o755))
	must(t, os.WriteFile(big, nil, 0o644))
	must(t, os.Truncate(big, 256<<20)) // sparse: no disk written
	f.commit(t, "huge blob", nil)
	srv, err := gitserver.StartHTTP(f.root)
	must(t, err)
	t.Cleanup(srv.Stop)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRefusedSync$")
	cmd.Env = append(os.Environ(), "HELPER_REFUSED_URL="+srv.URL("addons"), "HELPER_REFUSED_DIR="+filepath.Join(t.TempDir(), "c"))
	_, rss, out := measureOutput(t, cmd)
	refusal, _, _ := strings.Cut(out, "\n")
	t.Logf("peak RSS of the sync: %.1f MiB; %s", float64(rss)/(1<<20), refusal)
	for _, w := range []string{"refused:", "modules/big/zeros.bin", "256 MiB", "16 MiB"} {
		if !strings.Contains(out, w) {
			t.Fatalf("the sync's output does not say %q:\n%s", w, out)
		}
	}
	if rss > 150<<20 {
		t.Fatalf("peak RSS %.1f MiB, want under 150 MiB", float64(rss)/(1<<20))
	}
}
