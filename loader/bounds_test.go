package loader

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// goodTree copies testdata/good into base/tree and returns the tree's
// path; base itself is outside the tree, where links must not lead.
func goodTree(t *testing.T) (base, tree string) {
	t.Helper()
	base = t.TempDir()
	tree = filepath.Join(base, "tree")
	if err := os.CopyFS(tree, os.DirFS("testdata/good")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "secret.yaml"), []byte("global: {secret: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return base, tree
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	_ = os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// loadBounded loads with a deadline and fails the test when Load returns
// far later: a read that ignores ctx (a FIFO, /dev/zero) would block here
// for ever. The goroutine of such a Load leaks; the test has failed then.
func loadBounded(t *testing.T, l *Loader, root string, deadline time.Duration) (*Model, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	type result struct {
		m   *Model
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := l.Load(ctx, root, filepath.Join(root, "modules"), filepath.Join(root, "global-hooks"))
		done <- result{m, err}
	}()
	watchdog := time.NewTimer(deadline + 10*time.Second)
	defer watchdog.Stop()
	select {
	case r := <-done:
		return r.m, r.err
	case <-watchdog.C:
		t.Fatalf("Load still running %s past its deadline", 10*time.Second)
		return nil, nil
	}
}

func TestTreeBounds(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, base, tree string)
		file  string // the path (in the tree) the error must name; "" for a tree that loads
		want  string
		check func(t *testing.T, m *Model)
	}{
		{
			name: "chain of links among hidden global hooks entries",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, ".b", filepath.Join(tree, "global-hooks/.a"))
				symlink(t, "../../secret.yaml", filepath.Join(tree, "global-hooks/.b"))
			},
			file: "global-hooks/.a", want: "leads out of the tree",
		},
		{
			name: "chain of links, each inside on paper",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "global-hooks/..", filepath.Join(tree, "hop"))
				symlink(t, "../../../hop/../secret.yaml", filepath.Join(tree, "modules/001-module/templates/x.yaml"))
			},
			file: "modules/001-module/templates/x.yaml", want: "leads out of the tree",
		},
		{
			name: "link to /dev/zero among hidden global hooks entries",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "/dev/zero", filepath.Join(tree, "global-hooks/.zero"))
			},
			file: "global-hooks/.zero", want: "leads out of the tree",
		},
		{
			name: "hidden link in global openapi leading out",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "../../../secret.yaml", filepath.Join(tree, "global-hooks/openapi/.x.yaml"))
			},
			file: "global-hooks/openapi/.x.yaml", want: "leads out of the tree",
		},
		{
			name: "common values.yaml linked out",
			setup: func(t *testing.T, base, tree string) {
				_ = os.Remove(filepath.Join(tree, "modules/values.yaml"))
				symlink(t, "../../secret.yaml", filepath.Join(tree, "modules/values.yaml"))
			},
			file: "modules/values.yaml", want: "leads out of the tree",
		},
		{
			name: "FIFO as a module's values.yaml",
			setup: func(t *testing.T, base, tree string) {
				mkfifo(t, filepath.Join(tree, "modules/001-module/values.yaml"))
			},
			file: "modules/001-module/values.yaml", want: "not a regular file",
		},
		{
			name: "hidden FIFO in global hooks",
			setup: func(t *testing.T, base, tree string) {
				mkfifo(t, filepath.Join(tree, "global-hooks/.fifo"))
			},
			file: "global-hooks/.fifo", want: "not a regular file",
		},
		{
			name: "FIFO as a module's enabled script",
			setup: func(t *testing.T, base, tree string) {
				mkfifo(t, filepath.Join(tree, "modules/001-module/enabled"))
			},
			file: "modules/001-module/enabled", want: "not a regular file",
		},
		{
			name: "values.yaml over the size limit",
			setup: func(t *testing.T, base, tree string) {
				big := strings.Repeat("# padding padding padding padding padding padding padding\n", 100_000) + "module: {}\n"
				writeFile(t, filepath.Join(tree, "modules/001-module/values.yaml"), big, 0o644)
			},
			file: "modules/001-module/values.yaml", want: "over the limit",
		},
		{
			name: "schema over the size limit",
			setup: func(t *testing.T, base, tree string) {
				big := strings.Repeat("# padding padding padding padding padding padding padding\n", 100_000) + "type: object\n"
				writeFile(t, filepath.Join(tree, "global-hooks/openapi/config-values.yaml"), big, 0o644)
			},
			file: "global-hooks/openapi/config-values.yaml", want: "over the limit",
		},
		{
			name: "Chart.yaml over the size limit",
			setup: func(t *testing.T, base, tree string) {
				f, err := os.OpenFile(filepath.Join(tree, "modules/001-module/Chart.yaml"), os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := f.Truncate(64 << 20); err != nil { // sparse: costs no disk
					t.Fatal(err)
				}
			},
			file: "modules/001-module/Chart.yaml", want: "over the limit",
		},
		{
			name: "broken link",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "missing.yaml", filepath.Join(tree, "modules/001-module/templates/broken.yaml"))
			},
			file: "modules/001-module/templates/broken.yaml", want: "broken symlink",
		},
		{
			name: "openapi directory linked out",
			setup: func(t *testing.T, base, tree string) {
				writeFile(t, filepath.Join(base, "openapi/values.yaml"), "type: object\n", 0o644)
				symlink(t, "../../../openapi", filepath.Join(tree, "modules/001-module/openapi"))
			},
			file: "modules/001-module/openapi", want: "leads out of the tree",
		},
		{
			name: "module directory linked out",
			setup: func(t *testing.T, base, tree string) {
				writeFile(t, filepath.Join(base, "elsewhere/values.yaml"), "elsewhere: {}\n", 0o644)
				symlink(t, "../../elsewhere", filepath.Join(tree, "modules/050-elsewhere"))
			},
			file: "modules/050-elsewhere", want: "leads out of the tree",
		},
		{
			name: "links in a loop",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "b", filepath.Join(tree, "modules/001-module/a"))
				symlink(t, "a", filepath.Join(tree, "modules/001-module/b"))
			},
			file: "modules/001-module/a", want: "symlinks loop",
		},
		{
			name: "link to a sibling inside the tree",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "daemon-set.yaml", filepath.Join(tree, "modules/001-module/templates/copy.yaml"))
				symlink(t, "../../001-nginx-ingress/values.yaml", filepath.Join(tree, "modules/001-module/templates/values-copy.yaml"))
			},
			check: func(t *testing.T, m *Model) {
				if m.Module("module").Hash == "" {
					t.Fatal("no hash")
				}
			},
		},
		{
			name: "link to a directory inside the module",
			setup: func(t *testing.T, base, tree string) {
				symlink(t, "../hooks", filepath.Join(tree, "modules/001-module/docs/hooks-link"))
				symlink(t, "..", filepath.Join(tree, "modules/001-module/docs/loop"))
			},
			check: func(t *testing.T, m *Model) {
				if len(m.Module("module").Hooks) != 1 {
					t.Fatalf("hooks = %+v", m.Module("module").Hooks)
				}
			},
		},
		{
			name: "module through a symlink to a directory inside the tree",
			setup: func(t *testing.T, base, tree string) {
				writeFile(t, filepath.Join(tree, "shared/linked/values.yaml"), "linked: {a: 1}\n", 0o644)
				writeFile(t, filepath.Join(tree, "shared/linked/templates/cm.yaml"), "kind: ConfigMap\n", 0o644)
				writeFile(t, filepath.Join(tree, "shared/linked/hooks/h.sh"), "#!/bin/sh\necho '{\"beforeHelm\": 1}'\n", 0o755)
				symlink(t, "../shared/linked", filepath.Join(tree, "modules/050-linked"))
			},
			check: func(t *testing.T, m *Model) {
				mod := m.Module("linked")
				if mod == nil || !mod.HasChart || len(mod.Hooks) != 1 || mod.Hooks[0].Name != "050-linked/hooks/h.sh" || mod.Hash == "" {
					t.Fatalf("linked module = %+v", mod)
				}
				if o, ok := mod.Hooks[0].Config.Order(BeforeHelm); !ok || o != 1 {
					t.Fatalf("linked module's hook config = %+v", mod.Hooks[0].Config)
				}
			},
		},
	}
	l := New(WithLogger(quietLogger()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, tree := goodTree(t)
			tt.setup(t, base, tree)
			m, err := loadBounded(t, l, tree, 20*time.Second)
			if tt.file == "" {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, m)
				return
			}
			if err == nil || m != nil {
				t.Fatalf("loaded a tree that %s", tt.want)
			}
			if !strings.Contains(err.Error(), filepath.Join(tree, tt.file)+":") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to name %s and say %q", err, tt.file, tt.want)
			}
		})
	}
}

// TestLoadHonoursDeadline: hashing a huge file stops at the deadline.
func TestLoadHonoursDeadline(t *testing.T) {
	_, tree := goodTree(t)
	f, err := os.Create(filepath.Join(tree, "modules/001-module/huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// sparse: reading it costs no disk, hashing it all takes tens of seconds
	if err := f.Truncate(64 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	start := time.Now()
	_, err = loadBounded(t, New(WithLogger(quietLogger())), tree, 300*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	t.Logf("returned %s after the start", time.Since(start))
}

// TestOwnRoots: with no tree root, the modules directory, each module and
// the global hooks directory bound the links in them by themselves.
func TestOwnRoots(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, tree string)
		file  string
		want  string
	}{
		{name: "good tree", setup: func(t *testing.T, tree string) {}},
		{
			name: "module through a link inside the modules directory",
			setup: func(t *testing.T, tree string) {
				writeFile(t, filepath.Join(tree, "modules/.shared/linked/values.yaml"), "linked: {a: 1}\n", 0o644)
				symlink(t, ".shared/linked", filepath.Join(tree, "modules/050-linked"))
			},
		},
		{
			name: "link from a module to another",
			setup: func(t *testing.T, tree string) {
				symlink(t, "../../001-nginx-ingress/values.yaml", filepath.Join(tree, "modules/001-module/templates/x.yaml"))
			},
			file: "modules/001-module/templates/x.yaml", want: "leads out of the tree",
		},
		{
			name: "link from global hooks to modules",
			setup: func(t *testing.T, tree string) {
				symlink(t, "../modules/values.yaml", filepath.Join(tree, "global-hooks/.values.yaml"))
			},
			file: "global-hooks/.values.yaml", want: "leads out of the tree",
		},
	}
	l := New(WithLogger(quietLogger()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, tree := goodTree(t)
			tt.setup(t, tree)
			m, err := l.Load(t.Context(), "", filepath.Join(tree, "modules"), filepath.Join(tree, "global-hooks"))
			if tt.file == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Global.Hooks) != 2 || m.Module("module") == nil {
					t.Fatalf("model = %+v", m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), filepath.Join(tree, tt.file)+":") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to name %s and say %q", err, tt.file, tt.want)
			}
		})
	}
}

func TestDirectoriesBeneathRoot(t *testing.T) {
	_, tree := goodTree(t)
	other := t.TempDir()
	_, err := New().Load(t.Context(), tree, other, filepath.Join(tree, "global-hooks"))
	if err == nil || !strings.Contains(err.Error(), other+": not beneath the tree's root") {
		t.Fatalf("err = %v", err)
	}
	// a missing global hooks directory is an empty one, wherever it is
	m, err := New().Load(t.Context(), tree, filepath.Join(tree, "modules"), filepath.Join(other, "none"))
	if err != nil || len(m.Global.Hooks) != 0 {
		t.Fatalf("missing global hooks directory: %v", err)
	}
	// a relative root and directories named through a link to the tree
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, tree, link)
	rel, err := filepath.Rel(must(os.Getwd()), tree)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New().Load(t.Context(), rel, filepath.Join(link, "modules"), filepath.Join(link, "global-hooks")); err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"values.yaml", true},
		{".hidden", true},
		{"..double-dot-prefix", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a\x00b", false},
		{"a/b", false},
		{"../escape", false},
	}
	for _, tt := range tests {
		if err := checkName(tt.name); (err == nil) != tt.ok {
			t.Errorf("checkName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// TestSpecialFilesRefused: devices and FIFOs are refused by what they
// are, not only because links to them lead out of the tree.
func TestSpecialFilesRefused(t *testing.T) {
	fifoDir := t.TempDir()
	mkfifo(t, filepath.Join(fifoDir, "fifo"))
	tests := []struct {
		dir, entry, want string
	}{
		{"/dev", "null", "a character device"},
		{"/dev", "zero", "a character device"},
		{fifoDir, "fifo", "a FIFO"},
	}
	for _, tt := range tests {
		r, err := os.OpenRoot(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		d := dir{s: newSession(t.Context(), DefaultMaxFileSize, ""), root: r, rel: ".", abs: tt.dir}
		if _, err := d.readFile(tt.entry); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("read %s/%s: err = %v, want %q", tt.dir, tt.entry, err, tt.want)
		}
		if _, err := d.stat(tt.entry); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("stat %s/%s: err = %v, want %q", tt.dir, tt.entry, err, tt.want)
		}
		if err := hashFile(io.Discard, d, tt.entry, tt.entry); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("hash %s/%s: err = %v, want %q", tt.dir, tt.entry, err, tt.want)
		}
	}
}
