package hookmetrics

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseBounds: names, values, labels and buckets past their bounds
// fail the line.
func TestParseBounds(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	labels := func(n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf(`"l%d":"v"`, i))
		}
		return "{" + strings.Join(b, ",") + "}"
	}
	buckets := func(n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprint(i+1))
		}
		return "[" + strings.Join(b, ",") + "]"
	}
	tests := []struct {
		line, err string
	}{
		{`{"name":"` + long(MaxNameBytes) + `","set":1}`, ""},
		{`{"name":"` + long(MaxNameBytes+1) + `","set":1}`, "metric name of 257 bytes"},
		{`{"name":"m","set":1,"labels":{"` + long(MaxNameBytes+1) + `":"v"}}`, "label name of 257 bytes"},
		{`{"name":"m","set":1,"labels":{"k":"` + long(MaxValueBytes) + `"}}`, ""},
		{`{"name":"m","set":1,"labels":{"k":"` + long(MaxValueBytes+1) + `"}}`, "label k: a value of 1025 bytes"},
		{`{"name":"m","set":1,"labels":` + labels(MaxLabels) + `}`, ""},
		{`{"name":"m","set":1,"labels":` + labels(MaxLabels+1) + `}`, "33 labels"},
		{`{"name":"m","action":"observe","value":1,"buckets":` + buckets(MaxBuckets) + `}`, ""},
		{`{"name":"m","action":"observe","value":1,"buckets":` + buckets(MaxBuckets+1) + `}`, "101 buckets"},
		{`{"group":"` + long(MaxNameBytes+1) + `","name":"m","set":1}`, "group of 257 bytes"},
	}
	for i, tt := range tests {
		_, err := Parse([]byte("{\"name\":\"ok\",\"set\":1}\n" + tt.line + "\n"))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), "line 2: ") || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%d: err = %v, want %q on line 2", i, err, tt.err)
		}
	}
}

// TestStoreBytes: a budget holds what fits its bytes, however few series
// that is; hooks of one budget (one batch executable, a renamed hook)
// share it; another budget is not charged.
func TestStoreBytes(t *testing.T) {
	s := New(Limits{Bytes: 64 << 10})
	big := strings.Repeat("v", MaxValueBytes)
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, `{"group":"g%d","name":"m_big","set":1,"labels":{"i":"%d","v":"%s"}}`+"\n", i%2, i, big)
	}
	exe := Owner{Module: "m", Hook: "hooks/batch:first:0", Budget: "m\x00batch"}
	dropped := apply(t, s, exe, b.String())
	kept := 100 - dropped
	if kept == 0 || dropped == 0 || s.Bytes() > 64<<10 {
		t.Fatalf("kept %d, dropped %d, %d bytes; want some of each within 64 KiB", kept, dropped, s.Bytes())
	}
	// another hook of the same executable (or the hook renamed) has no fresh budget
	renamed := Owner{Module: "m", Hook: "hooks/batch:renamed:0", Budget: exe.Budget}
	if d := apply(t, s, renamed, `{"name":"m_big","set":1,"labels":{"v":"`+big+`"}}`); d != 1 {
		t.Fatalf("renamed hook: dropped %d, want 1", d)
	}
	// another executable has its own
	if d := apply(t, s, Owner{Module: "m", Hook: "hooks/other.sh", Budget: "m\x00other.sh"}, `{"name":"m_big","set":1,"labels":{"v":"`+big+`"}}`); d != 0 {
		t.Fatalf("other executable: dropped %d", d)
	}
	// expiring a group gives its bytes back
	apply(t, s, exe, `{"group":"g0","action":"expire"}`)
	if d := apply(t, s, renamed, `{"name":"m_big","set":1,"labels":{"v":"`+big+`"}}`); d != 0 {
		t.Fatalf("after expire: dropped %d", d)
	}
}

// TestStoreRetain: the series of hooks that left the tree go, whichever
// group they are in; a late run of such a hook applies nothing, until the
// hook is back.
func TestStoreRetain(t *testing.T) {
	s := New(Limits{})
	gone, stays := Owner{Module: "m", Hook: "hooks/gone.sh"}, Owner{Hook: "stays.sh"}
	apply(t, s, gone, `{"name":"m_a","set":1}`+"\n"+`{"group":"shared","name":"m_b","set":1,"labels":{"k":"gone"}}`)
	apply(t, s, stays, `{"name":"m_a","set":2}`+"\n"+`{"group":"other","name":"m_b","set":1,"labels":{"k":"stays"}}`)
	if n := s.Retain([]Hook{{Hook: "stays.sh"}}); n != 2 || s.Series() != 2 {
		t.Fatalf("retain dropped %d, %d series left", n, s.Series())
	}
	if d := apply(t, s, gone, `{"name":"m_a","set":3}`); d != 1 || s.Series() != 2 {
		t.Fatalf("a run of a hook gone: dropped %d, %d series", d, s.Series())
	}
	s.Retain([]Hook{{Hook: "stays.sh"}, {Module: "m", Hook: "hooks/gone.sh"}})
	if d := apply(t, s, gone, `{"name":"m_a","set":3}`); d != 0 || s.Series() != 3 {
		t.Fatalf("back in the tree: dropped %d, %d series", d, s.Series())
	}
}
