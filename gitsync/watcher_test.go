package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestWatcherDebouncesAndFollowsNewDirs(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var changes atomic.Int32
	w := NewTreeWatcher(nil, 150*time.Millisecond, dir, filepath.Join(dir, "missing"))
	go func() { _ = w.Run(ctx, func() { changes.Add(1) }) }()
	time.Sleep(100 * time.Millisecond)

	// a save burst: several writes close together
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte{byte('a' + i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, func() bool { return changes.Load() == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := changes.Load(); n != 1 {
		t.Fatalf("a save burst gave %d changes", n)
	}
	// a new module directory, then a file inside it
	if err := os.MkdirAll(filepath.Join(dir, "002-new/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return changes.Load() == 2 })
	if err := os.WriteFile(filepath.Join(dir, "002-new/hooks/h.sh"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return changes.Load() == 3 })
	// swap files do not count
	if err := os.WriteFile(filepath.Join(dir, ".values.yaml.swp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if n := changes.Load(); n != 3 {
		t.Fatalf("a swap file counted: %d", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
