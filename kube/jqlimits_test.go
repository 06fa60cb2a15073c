package kube

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A filter's results are bounded in count and size; past a bound the
// result is an error that says which.
func TestJqBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		filter, want, err string
	}{
		{filter: ".a", want: "1"},
		{filter: "range(0; 3)", want: "[0 1 2]"},
		{filter: "range(0; 1000)", want: ""},
		{filter: "range(0; 1001)", err: "more than 1000 results"},
		{filter: "[range(0; 300000)]", err: "more than 1048576"},
		{filter: "error(\"boom\")", err: "boom"},
	} {
		t.Run(tc.filter, func(t *testing.T) {
			got, err := runJq(compile(t, tc.filter), map[string]any{"a": 1})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := fmtResult(got); tc.want != "" && s != tc.want {
				t.Fatalf("result = %s, want %s", s, tc.want)
			}
		})
	}
}

func fmtResult(v any) string { return fmt.Sprint(v) }

// TestSlowFilterStallsNoReader: while one binding's jqFilter runs long on
// a new object (here until its 5 s timeout), another binding on the same
// shared watch still reads its snapshot and count at once (what its hook
// run and /status do), and so does the list of watches.
func TestSlowFilterStallsNoReader(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	w := newWatcher(t)
	spec := MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}}
	slowSpec := spec
	slowSpec.Name, slowSpec.JqFilter = "slow", compile(t, "last(range(1e12))")
	slow := startMonitor(t, w, slowSpec, &recorder{})
	other := &recorder{}
	spec.Name = "other"
	fast := startMonitor(t, w, spec, other)
	if len(w.Watches()) != 1 {
		t.Fatalf("watches = %+v, want one shared", w.Watches())
	}
	configMap(t, ns, "one", nil, nil)
	time.Sleep(time.Second) // the event arrived; the slow filter runs
	start := time.Now()
	for what, read := range map[string]func(){
		"a snapshot": func() { fast.Snapshot() }, "a count": func() { fast.Len() },
		"the slow binding's count": func() { slow.Len() }, "the watches": func() { w.Watches() },
	} {
		done := make(chan struct{})
		go func() { read(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Errorf("%s waited on the slow filter", what)
			<-done
		}
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("reads took %s", time.Since(start))
	}
	// once the filter gives up, both bindings see the object
	evs := other.wait(t, 1)
	if evs[0].Name != "one" {
		t.Fatalf("events = %+v", evs)
	}
	if snap := slow.Snapshot(); len(snap) != 1 || !strings.Contains(fmt.Sprint(snap[0].FilterResult), "deadline") {
		t.Fatalf("slow binding's snapshot = %+v", snap)
	}
}
