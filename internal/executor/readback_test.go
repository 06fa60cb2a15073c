package executor

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadResultFile reads what a hook may leave at a result path: a
// regular file within the bound is read; a link, a FIFO, a directory or a
// file over the bound is refused, promptly and without reading it whole.
func TestReadResultFile(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, p string)
		want    string
		wantErr string
	}{
		{name: "regular file", make: func(t *testing.T, p string) { write(t, p, `[{"op":"add"}]`) }, want: `[{"op":"add"}]`},
		{name: "empty file", make: func(t *testing.T, p string) { write(t, p, "") }},
		{name: "at the limit", make: func(t *testing.T, p string) { write(t, p, strings.Repeat("x", MaxResultFile)) }, want: strings.Repeat("x", MaxResultFile)},
		{name: "link to /etc/passwd", make: func(t *testing.T, p string) { must(t, os.Symlink("/etc/passwd", p)) }, wantErr: "symbolic link"},
		{name: "FIFO with no writer", make: func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o600)) }, wantErr: "not a regular file"},
		{name: "directory", make: func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o700)) }, wantErr: "not a regular file"},
		{name: "over the limit", make: func(t *testing.T, p string) { write(t, p, strings.Repeat("x", MaxResultFile+1)) }, wantErr: "over the limit"},
		// sparse: 300 MiB that take no disk, and must take no memory
		{name: "300 MiB", make: func(t *testing.T, p string) { write(t, p, ""); must(t, os.Truncate(p, 300<<20)) }, wantErr: "314572800 bytes, over the limit of 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "values-patch.json")
			tt.make(t, p)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			got, err := ReadResultFile(p, 0)
			runtime.ReadMemStats(&after)
			if time.Since(start) > 5*time.Second {
				t.Fatal("the read blocked")
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*MaxResultFile {
				t.Errorf("allocated %d MiB", grew>>20)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
		})
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(s), 0o600))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
