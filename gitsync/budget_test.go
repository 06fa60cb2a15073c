package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// A fetched pack over a budget (objects, bytes, what it expands to) is
// refused whole, at once, without a revision: files outside the checked
// out paths count too, as a remote that does not filter sends them.
func TestPackOverBudgetIsRefused(t *testing.T) {
	many := map[string]string{}
	for i := range 200 {
		many[fmt.Sprintf("other/f%03d", i)] = fmt.Sprintf("file %d\n", i)
	}
	tests := []struct {
		name  string
		opts  Options[any]
		files map[string]string
		want  string
	}{
		{name: "objects", opts: Options[any]{MaxFiles: 10}, files: many, want: "objects, more than 100 (10 for each file"},
		{name: "bytes", opts: Options[any]{MaxCheckoutSize: 64 << 10},
			files: map[string]string{"other/noise.bin": noise(1, 1<<20)}, want: "bigger than 128 KiB"},
		{name: "expanded", opts: Options[any]{MaxCheckoutSize: 64 << 10},
			files: map[string]string{"other/zeros.bin": strings.Repeat("\x00", 1<<20)}, want: "come to more than 256 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			o := tt.opts
			o.URL, o.Ref, o.CheckoutDir = f.http.URL("addons"), "main", filepath.Join(t.TempDir(), "c")
			o.Auth, o.Paths = Auth{Username: "alice", PasswordFile: f.passFile}, []string{"modules"}
			o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			s, err := New(o)
			must(t, err)
			first, _, err := s.Sync(t.Context())
			must(t, err)
			f.commit(t, "big beside modules", tt.files)
			start := time.Now()
			_, changed, err := s.Sync(t.Context())
			if err == nil || changed || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errPackBudget) {
				t.Fatalf("changed = %v, err = %v; want %q", changed, err, tt.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("refused after %s", took)
			}
			if s.Current().Commit != first.Commit || !strings.Contains(s.Status().LastError, tt.want) {
				t.Fatalf("current = %s, status = %+v", s.Current().Commit, s.Status())
			}
			left, _ := filepath.Glob(filepath.Join(o.CheckoutDir, ".pack-*"))
			if len(left) > 0 {
				t.Fatalf("received packs left on disk: %v", left)
			}
		})
	}
}

// Deltas that each make a big object from a small base count toward the
// expanded budget, though the pack is small.
func TestScanPackBoundsDeltaOutput(t *testing.T) {
	base := []byte(strings.Repeat("base ", 200)) // 1000 bytes
	objs := []packObject{{typ: plumbing.BlobObject, data: base}}
	for i := range 300 {
		objs = append(objs, packObject{typ: plumbing.OFSDeltaObject, data: delta(base, fmt.Sprint(i)), ofsBase: 0})
	}
	pack := buildPack(t, objs)
	// 300 deltas make 300 KB; the budget is 4 × 64 KiB
	_, err := scanPack(t.Context(), strings.NewReader(string(pack)), io.Discard, limits{checkoutSize: 64 << 10})
	if err == nil || !strings.Contains(err.Error(), "come to more than 256 KiB") {
		t.Fatalf("err = %v", err)
	}
	if _, err := scanPack(t.Context(), strings.NewReader(string(pack)), io.Discard, limits{checkoutSize: 1 << 20}); err != nil {
		t.Fatal(err)
	}
}

// A pack that arrived whole is not indexed into the store after the
// sync's context ended: indexing stops at its next object.
func TestIndexingStopsWithTheContext(t *testing.T) {
	blob := []byte("") // inflates to nothing: the scan has nothing to stop on
	pack := buildPack(t, []packObject{{typ: plumbing.BlobObject, data: blob}})
	s, err := New(Options[any]{URL: "file:///nowhere", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = fetcherOf(s).receivePack(ctx, strings.NewReader(string(pack)))
	if !errors.Is(err, context.Canceled) || isDamaged(err) {
		t.Fatalf("err = %v; want the context's, not damage", err)
	}
	if here, _ := storeOf(s).has(blobHashOf(blob)); here {
		t.Fatal("the pack was stored")
	}
	// with a live context, the same pack is stored and read back
	must(t, fetcherOf(s).receivePack(t.Context(), strings.NewReader(string(pack))))
	if here, err := storeOf(s).has(blobHashOf(blob)); !here || err != nil {
		t.Fatalf("stored: %v, %v", here, err)
	}
	if _, err := os.Stat(storeOf(s).dir); err != nil {
		t.Fatal(err)
	}
}
