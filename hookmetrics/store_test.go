package hookmetrics

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantErr string
		want              int
	}{
		{name: "empty", in: "", want: 0},
		{name: "blank lines", in: "\n\n", want: 0},
		{name: "shortcuts", in: `{"name":"a","add":1}` + "\n" + `{"name":"b","set":-1}`, want: 2},
		{name: "expire", in: `{"group":"g","action":"expire"}`, want: 1},
		{name: "bad json names its line", in: `{"name":"a","add":1}` + "\n" + `{"name":"b",`, wantErr: "line 2:"},
		{name: "bad json later on the line", in: "{\"name\":\"a\",\"add\":1}\n\n{\"name\":\"b\" \"set\":1}", wantErr: "line 3:"},
		{name: "not an object", in: `{"name":"a","add":1}` + "\n" + `42`, wantErr: "line 2:"},
		{name: "no action", in: `{"name":"a","value":1}`, wantErr: `line 1: one of "action", "add" or "set" is required`},
		{name: "unknown action", in: `{"name":"a","action":"inc","value":1}`, wantErr: `line 1: unknown action "inc"`},
		{name: "add and set", in: `{"name":"a","add":1,"set":1}`, wantErr: `exclude each other`},
		{name: "no value", in: `{"name":"a","action":"set"}`, wantErr: `a numeric "value" is required`},
		{name: "negative add", in: `{"name":"a","add":-1}`, wantErr: `a counter cannot add -1`},
		{name: "observe without buckets", in: `{"name":"a","action":"observe","value":1}`, wantErr: `needs "buckets"`},
		{name: "unsorted buckets", in: `{"name":"a","action":"observe","value":1,"buckets":[2,1]}`, wantErr: `strictly increasing`},
		{name: "bad name", in: `{"name":"a-b","set":1}`, wantErr: `"a-b" is not a Prometheus metric name`},
		{name: "bad label", in: `{"name":"a","set":1,"labels":{"__x":"1"}}`, wantErr: `label name "__x"`},
		{name: "expire without group", in: `{"action":"expire"}`, wantErr: `needs a "group"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(ops) != tc.want {
				t.Fatalf("got %d ops, %v; want %d", len(ops), err, tc.want)
			}
		})
	}
}

func apply(t *testing.T, s *Store, o Owner, in string) int {
	t.Helper()
	ops, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := s.Apply(o, ops)
	if err != nil {
		t.Fatal(err)
	}
	return dropped
}

func TestStore(t *testing.T) {
	data, err := os.ReadFile("testdata/all-actions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Limits{})
	h1 := Owner{Module: "alpha", Hook: "hooks/a.sh"}
	apply(t, s, h1, string(data))
	want := `
# HELP hook_grouped hook_grouped
# TYPE hook_grouped gauge
hook_grouped{a="x",hook="hooks/a.sh",module="alpha"} 1
hook_grouped{a="y",hook="hooks/a.sh",module="alpha"} 2
# HELP hook_items hook_items
# TYPE hook_items gauge
hook_items{hook="hooks/a.sh",kind="pod",module="alpha"} 33
# HELP hook_latency_seconds hook_latency_seconds
# TYPE hook_latency_seconds histogram
hook_latency_seconds_bucket{hook="hooks/a.sh",module="alpha",le="0.1"} 0
hook_latency_seconds_bucket{hook="hooks/a.sh",module="alpha",le="0.5"} 1
hook_latency_seconds_bucket{hook="hooks/a.sh",module="alpha",le="1"} 1
hook_latency_seconds_bucket{hook="hooks/a.sh",module="alpha",le="+Inf"} 1
hook_latency_seconds_sum{hook="hooks/a.sh",module="alpha"} 0.3
hook_latency_seconds_count{hook="hooks/a.sh",module="alpha"} 1
# HELP hook_runs_total hook_runs_total
# TYPE hook_runs_total counter
hook_runs_total{hook="hooks/a.sh",kind="pod",module="alpha"} 3
`
	if err := testutil.CollectAndCompare(s, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	// a same-named hook of another module, and a global hook, keep their own
	h2 := Owner{Module: "beta", Hook: "hooks/a.sh"}
	g := Owner{Hook: "100-g.sh"}
	apply(t, s, h2, `{"name":"hook_items","set":1,"labels":{"module":"spoofed"}}`)
	apply(t, s, g, `{"name":"hook_items","set":2}`)
	// the next run of h1 replaces its ungrouped series; g1 is left alone
	apply(t, s, h1, `{"name":"hook_items","set":5,"labels":{"kind":"pod"}}`)
	want = `
# HELP hook_grouped hook_grouped
# TYPE hook_grouped gauge
hook_grouped{a="x",hook="hooks/a.sh",module="alpha"} 1
hook_grouped{a="y",hook="hooks/a.sh",module="alpha"} 2
# HELP hook_items hook_items
# TYPE hook_items gauge
hook_items{hook="hooks/a.sh",kind="pod",module="alpha"} 5
hook_items{hook="hooks/a.sh",module="beta"} 1
hook_items{hook="100-g.sh"} 2
`
	if err := testutil.CollectAndCompare(s, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// a run writing nothing keeps everything; any hook may expire a group
	apply(t, s, h1, ``)
	apply(t, s, g, `{"group":"g1","action":"expire"}`)
	if n := testutil.CollectAndCount(s, "hook_grouped"); n != 0 {
		t.Fatalf("hook_grouped: %d series after expire", n)
	}
	// a group rewritten keeps only what the last batch wrote
	apply(t, s, h1, `{"group":"g2","name":"hook_g2","set":1,"labels":{"a":"x"}}`+"\n"+`{"group":"g2","name":"hook_g2","set":1,"labels":{"a":"y"}}`)
	apply(t, s, h1, `{"group":"g2","name":"hook_g2","set":1,"labels":{"a":"y"}}`)
	if n := testutil.CollectAndCount(s, "hook_g2"); n != 1 {
		t.Fatalf("hook_g2: %d series, want 1", n)
	}
}

func TestStoreTypeConflict(t *testing.T) {
	s := New(Limits{})
	o := Owner{Hook: "h.sh"}
	apply(t, s, o, `{"name":"m","set":1}`)
	ops, err := Parse([]byte(`{"name":"other","set":1}` + "\n" + `{"name":"m","add":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(o, ops); err == nil || !strings.Contains(err.Error(), "line 2: m is a gauge") {
		t.Fatalf("err = %v", err)
	}
	// nothing of the refused batch applied
	if n := testutil.CollectAndCount(s, "other"); n != 0 {
		t.Fatalf("other: %d series", n)
	}
}

// Check refuses what Apply would, before a run applies anything: a type
// change, and names that collide with a histogram's series (which would
// fail every gather of the registry).
func TestStoreCheck(t *testing.T) {
	s := New(Limits{})
	apply(t, s, Owner{Hook: "a.sh"}, `{"name":"lat","action":"observe","value":1,"buckets":[1,2]}`+"\n"+`{"name":"g","set":1}`)
	for _, tc := range []struct{ in, want string }{
		{`{"name":"g","add":1}`, "line 1: g is a gauge"},
		{`{"name":"lat_count","set":1}`, "line 1: lat_count is a series of histogram lat"},
		{`{"name":"g_sum","set":1}` + "\n" + `{"name":"g2","action":"observe","value":1,"buckets":[1]}` + "\n" + `{"name":"g2_bucket","set":1}`, "line 3: g2_bucket is a series of histogram g2"},
		{`{"name":"h","action":"observe","value":1,"buckets":[1]}`, ""},
	} {
		ops, err := Parse([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Check(ops)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.in, err, tc.want)
		}
	}
	apply(t, s, Owner{Hook: "b.sh"}, `{"name":"x_sum","set":1}`)
	ops, _ := Parse([]byte(`{"name":"x","action":"observe","value":1,"buckets":[1]}`))
	if err := s.Check(ops); err == nil || !strings.Contains(err.Error(), "histogram x would have the series x_sum") {
		t.Fatalf("err = %v", err)
	}
	// a written group may not take a hook's own group's name
	if _, err := Parse([]byte(`{"group":"\u0000alpha\u0000hooks/a.sh","action":"expire"}`)); err == nil || !strings.Contains(err.Error(), "control characters") {
		t.Fatalf("NUL group: err = %v", err)
	}
}

func TestStoreLimit(t *testing.T) {
	s := New(Limits{Series: 3})
	o := Owner{Module: "m", Hook: "hooks/h.sh"}
	var b strings.Builder
	for i := range 5 {
		b.WriteString(`{"group":"big","name":"m_items","set":1,"labels":{"i":"` + string(rune('a'+i)) + `"}}` + "\n")
	}
	if dropped := apply(t, s, o, b.String()); dropped != 2 {
		t.Fatalf("dropped %d, want 2", dropped)
	}
	// another hook is not limited by this one's series
	if dropped := apply(t, s, Owner{Hook: "g.sh"}, `{"name":"m_items","set":1}`); dropped != 0 {
		t.Fatalf("other hook dropped %d", dropped)
	}
	// expiring frees the hook's room
	apply(t, s, o, `{"group":"big","action":"expire"}`)
	if dropped := apply(t, s, o, `{"name":"m_items","set":1,"labels":{"i":"z"}}`); dropped != 0 || s.Series() != 2 {
		t.Fatalf("after expire: dropped %d, %d series", dropped, s.Series())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
