package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	l := limits{Max: 15, Hard: 20, Pending: map[string]string{"moduleSteps": "issue #31"}}
	types, err := count("testdata/mod", false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]finding{}
	for _, f := range judge(types, l) {
		got[f.Type.id()] = f
	}
	tests := []struct {
		id      string
		methods int
		verdict verdict
		listed  bool
	}{
		{id: "a.Small", methods: 15},
		{id: "a.Fine", methods: 2},
		{id: "a.Big", methods: 16, verdict: noReason, listed: true},
		{id: "a.Gen", methods: 16, verdict: noReason, listed: true},
		{id: "a.Grouped", methods: 16, verdict: noReason, listed: true},
		{id: "a.Reasoned", methods: 18, verdict: reasoned, listed: true},
		{id: "a.Huge", methods: 21, verdict: tooMany, listed: true},
		{id: "lifecycle/sub.moduleSteps", methods: 17, verdict: waiting, listed: true},
		{id: "lifecycle/sub.other", methods: 16, verdict: noReason, listed: true},
		{id: "other.moduleSteps", methods: 16, verdict: noReason, listed: true},
	}
	counts := map[string]int{}
	for _, ty := range types {
		counts[ty.id()] = ty.Methods
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if n := counts[tt.id]; n != tt.methods {
				t.Errorf("%d methods, want %d", n, tt.methods)
			}
			f, listed := got[tt.id]
			if listed != tt.listed {
				t.Fatalf("listed %v, want %v", listed, tt.listed)
			}
			if listed && f.Verdict != tt.verdict {
				t.Errorf("verdict %v (%s), want %v", f.Verdict, f, tt.verdict)
			}
		})
	}
	if _, ok := counts["nested.T"]; ok {
		t.Error("a directory with its own go.mod was counted")
	}
	if len(got) != 8 {
		t.Errorf("%d types listed, want 8: %v", len(got), got)
	}
}

func TestTestsFlag(t *testing.T) {
	t.Parallel()
	types, err := count("testdata/mod", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range types {
		if ty.id() == "a.Small" && ty.Methods != 18 {
			t.Errorf("a.Small with tests: %d methods, want 18", ty.Methods)
		}
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if rc := run(&out, "testdata/mod", limits{Max: 15, Hard: 20}); rc != 1 {
		t.Errorf("exit %d, want 1\n%s", rc, out.String())
	}
	if !strings.Contains(out.String(), "FAIL  21 a.Huge: over 20") {
		t.Errorf("output does not name a.Huge:\n%s", out.String())
	}
	out.Reset()
	if rc := run(&out, "testdata/mod/lifecycle", limits{Max: 15, Hard: 20, Pending: map[string]string{"moduleSteps": "x"}}); rc != 1 {
		t.Errorf("exit %d, want 1 (other has no reason)\n%s", rc, out.String())
	}
	out.Reset()
	if rc := run(&out, "testdata/mod/a", limits{Max: 25, Hard: 25}); rc != 0 || out.Len() != 0 {
		t.Errorf("exit %d, want 0 and no output\n%s", rc, out.String())
	}
}
