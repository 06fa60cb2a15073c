package kube

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Unit tests of the parts Helm, sharedWatch and Monitor own (no API
// server).

func TestReleaseSnapshot(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	a := &release.Release{Name: "a", Version: 1}
	a2 := &release.Release{Name: "a", Version: 2}
	tests := []struct {
		name          string
		do            func(s *releaseSnapshot)
		at            time.Time
		want          *release.Release
		cached, fresh bool
	}{
		{name: "empty: not fresh", do: func(*releaseSnapshot) {}, at: t0},
		{name: "listed: fresh until the TTL", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
		}, at: t0.Add(snapshotTTL - time.Second), want: a, cached: true, fresh: true},
		{name: "listed: stale after it", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
		}, at: t0.Add(snapshotTTL), want: a, cached: true},
		{name: "a write is recorded", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
			s.record("a", a2, t0)
		}, at: t0, want: a2, cached: true, fresh: true},
		{name: "a write answers for a TTL from it, past the list's", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
			s.record("a", a2, t0.Add(snapshotTTL-time.Second))
		}, at: t0.Add(2*snapshotTTL - 2*time.Second), want: a2, cached: true, fresh: true},
		{name: "a write is stale a TTL after it", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
			s.record("a", a2, t0)
		}, at: t0.Add(snapshotTTL), want: a2, cached: true},
		{name: "not listed: absent while the list is fresh", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"b": a}, t0.Add(snapshotTTL))
		}, at: t0, fresh: true},
		{name: "not listed: unknown after it", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"b": a}, t0.Add(snapshotTTL))
			s.record("b", a2, t0.Add(snapshotTTL))
		}, at: t0.Add(snapshotTTL)},
		{name: "a removal is recorded: fresh, not cached", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
			s.record("a", nil, t0)
		}, at: t0, fresh: true},
		{name: "a record keeps the head only", do: func(s *releaseSnapshot) {
			s.replace(nil, t0.Add(snapshotTTL))
			s.record("a", &release.Release{Name: "a", Version: 2, Config: map[string]any{"global": map[string]any{}},
				Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "a"}, Values: map[string]any{"x": 1}}}, t0)
		}, at: t0, want: &release.Release{Name: "a", Version: 2, Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "a"}}}, cached: true, fresh: true},
		{name: "invalidated: stale", do: func(s *releaseSnapshot) {
			s.replace(map[string]*release.Release{"a": a}, t0.Add(snapshotTTL))
			s.invalidate()
		}, at: t0, want: a, cached: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &releaseSnapshot{latest: map[string]snapshotEntry{}}
			tt.do(s)
			rel, cached, fresh := s.get("a", tt.at)
			if !reflect.DeepEqual(rel, tt.want) || cached != tt.cached || fresh != tt.fresh {
				t.Fatalf("get = %v, cached %v, fresh %v; want %v, %v, %v", rel, cached, fresh, tt.want, tt.cached, tt.fresh)
			}
		})
	}
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	rel := func(labels map[string]string) *release.Release { return &release.Release{Name: "m", Labels: labels} }
	tests := []struct {
		name   string
		labels map[string]string
		want   ownership
		err    string // notOurs, for releases not ours
	}{
		{"this instance's", map[string]string{LabelManagedBy: ManagedByValue, LabelInstance: "one"}, ownedByUs, ""},
		{"ours, before instances", map[string]string{LabelManagedBy: ManagedByValue}, ownedLegacy, ""},
		{"the original's", map[string]string{LabelOriginalChecksum: "abc"}, ownedByOriginal, ""},
		{"another instance's", map[string]string{LabelManagedBy: ManagedByValue, LabelInstance: "two"}, ownedByInstance,
			`release ns/m belongs to operator instance "two" (label ` + LabelInstance + `), this is "one"`},
		{"another tool's", map[string]string{"owner": "helm"}, ownedByOther, "release ns/m: "},
		{"no labels", nil, ownedByOther, "release ns/m: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ownerOf(rel(tt.labels), "one"); got != tt.want {
				t.Fatalf("ownerOf = %d, want %d", got, tt.want)
			}
			if tt.err == "" {
				return
			}
			err := notOurs(rel(tt.labels), "ns", "one")
			if !errors.Is(err, ErrNotOurs) || !strings.HasPrefix(err.Error(), tt.err) {
				t.Fatalf("notOurs = %v, want %q... wrapping ErrNotOurs", err, tt.err)
			}
		})
	}
}

// The records keep JSON while no member keeps whole objects and the
// decoded object while one does; encode hands filters their input only
// when one has a filter.
func TestBodyForm(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"metadata": map[string]any{"name": "a"}}
	keeper, filter := &member{keep: true}, testMember(t, ".metadata.name", false)
	tests := []struct {
		name      string
		join      []*member
		leave     []*member
		wantBody  string // "json" or "object"
		wantInput bool
	}{
		{name: "no members", wantBody: "json"},
		{name: "a filter", join: []*member{filter}, wantBody: "json", wantInput: true},
		{name: "a keeper", join: []*member{keeper}, wantBody: "object"},
		{name: "a keeper and a filter", join: []*member{keeper, filter}, wantBody: "object", wantInput: true},
		{name: "the keeper left", join: []*member{keeper, filter}, leave: []*member{keeper}, wantBody: "json", wantInput: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var f bodyForm
			records := map[string]*record{}
			body, _ := f.encode(obj)
			records["/a"] = newRecord("/a", "1", body, 0)
			for _, mb := range tt.join {
				f.join(mb, records)
			}
			for _, mb := range tt.leave {
				f.leave(mb, records)
			}
			// what the record holds now, and what a new object's would be
			for what, b := range map[string]any{"record": records["/a"].body, "new": first(f.encode(obj))} {
				if got := bodyKind(b); got != tt.wantBody {
					t.Errorf("%s body: %s, want %s", what, got, tt.wantBody)
				}
			}
			if _, in := f.encode(obj); (in.v != nil) != tt.wantInput || in.err != nil {
				t.Errorf("filter input %+v, want one: %v", in, tt.wantInput)
			}
			if got := records["/a"].object(); !reflect.DeepEqual(got, obj) {
				t.Errorf("object() = %v", got)
			}
		})
	}
}

func first(body any, _ jqInput) any { return body }

func bodyKind(b any) string {
	switch b.(type) {
	case []byte:
		return "json"
	case map[string]any:
		return "object"
	}
	return "?"
}

func TestDeletedStub(t *testing.T) {
	t.Parallel()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	tests := []struct {
		key  string
		want map[string]any
	}{
		{"ns/web", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "ns"}}},
		{"/cluster", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "cluster"}}},
	}
	for _, tt := range tests {
		if got := deletedStub(newRecord(tt.key, "1", nil, 0), gvr, "Deployment"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestChartCache(t *testing.T) {
	t.Parallel()
	dir := testChart(t, goodManifest)
	cc := &chartCache{charts: map[string]*chart.Chart{}}
	one, err := cc.load(Release{Name: "m", ChartDir: dir, ChartHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	two, err := cc.load(Release{Name: "m", ChartDir: dir, ChartHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	three, err := cc.load(Release{Name: "m", ChartDir: dir, ChartHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]*chart.Chart{{one, two}, {two, three}, {one, three}} {
		if pair[0] == pair[1] || pair[0].Metadata == pair[1].Metadata {
			t.Fatal("two loads share a chart: Helm edits the one it gets")
		}
	}
	if len(cc.charts) != 1 {
		t.Fatalf("%d charts cached, want 1", len(cc.charts))
	}
	if _, err := cc.load(Release{Name: "m", ChartDir: dir}); err != nil {
		t.Fatal(err)
	}
	for i := range maxCachedCharts {
		cc.charts[strings.Repeat("x", i+1)] = one
	}
	if _, err := cc.load(Release{Name: "m", ChartDir: dir, ChartHash: "h2"}); err != nil {
		t.Fatal(err)
	}
	if len(cc.charts) != 1 {
		t.Fatalf("%d charts cached past the bound, want 1 (the cache starts again)", len(cc.charts))
	}
}

func TestLastError(t *testing.T) {
	t.Parallel()
	var l lastError
	if got := l.get(); got != "" {
		t.Fatalf("before any error: %q", got)
	}
	l.set(errors.New("one"))
	l.set(errors.New("two"))
	if got := l.get(); got != "two" {
		t.Fatalf("get = %q, want the last", got)
	}
}
