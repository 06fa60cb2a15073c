package main

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
)

type reports struct {
	mu  sync.Mutex
	got []string
}

func (r *reports) Report(rep commitstatus.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := fmt.Sprintf("%s %s", rep.Commit, rep.State)
	if rep.Module != "" {
		line = fmt.Sprintf("%s %s/%s", rep.Commit, rep.Module, rep.State)
	}
	if rep.Reason != "" {
		line += ": " + rep.Reason
	}
	r.got = append(r.got, line)
}

func (r *reports) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// TestCommitHealth: a revision's health reaches its commit only once it
// is applied and every module's health has settled, each change once; a
// module's status follows it; a new revision starts over, one that
// failed gets none, and another commit's refusal leaves it be.
func TestCommitHealth(t *testing.T) {
	mods := map[string]health.ModuleHealth{}
	r := &reports{}
	c := newCommitHealth(r, func() map[string]health.ModuleHealth { return mods })
	set := func(name string, s health.Status) {
		h := health.ModuleHealth{Status: s}
		if s != health.Healthy {
			h.Objects = []health.ObjectHealth{{ObjectRef: kube.ObjectRef{Kind: "Deployment", Namespace: "ns", Name: name}, Status: "InProgress"}}
		}
		mods[name] = h
		c.transition(health.Transition{Module: name, Health: h})
	}
	applied := func(commit string) {
		c.revision(lifecycle.RevisionState{Commit: commit, State: lifecycle.RevisionApplied})
	}
	steps := []struct {
		do   func()
		want []string
	}{
		// before the revision is applied: nothing
		{func() { set("a", health.Healthy); set("b", health.Progressing) }, nil},
		{func() { applied("c1") }, []string{"c1 a/healthy", "c1 b/progressing: Deployment ns/b InProgress"}},
		{func() { set("b", health.Healthy) }, []string{"c1 b/healthy", "c1 healthy"}},
		// the same status again: nothing
		{func() { set("b", health.Healthy); applied("c1") }, nil},
		{func() { set("a", health.Degraded) }, []string{"c1 a/degraded: Deployment ns/a InProgress", "c1 degraded: module a: Deployment ns/a InProgress"}},
		{func() { set("a", health.Healthy) }, []string{"c1 a/healthy", "c1 healthy"}},
		// a new revision: applying, then applied with the same health
		{func() {
			c.revision(lifecycle.RevisionState{Commit: "c2", State: lifecycle.RevisionApplying})
			set("a", health.Progressing)
		}, nil},
		{func() { set("a", health.Healthy); applied("c2") }, []string{"c2 a/healthy", "c2 b/healthy", "c2 healthy"}},
		// a commit whose tree was refused: the applied one's health goes on
		{func() {
			c.revision(lifecycle.RevisionState{Commit: "c9", State: lifecycle.RevisionFailed, Reason: "refused"})
			set("b", health.Progressing)
		}, []string{"c2 b/progressing: Deployment ns/b InProgress"}},
		{func() { set("b", health.Healthy) }, []string{"c2 b/healthy"}},
		// a failed revision: no health
		{func() {
			c.revision(lifecycle.RevisionState{Commit: "c3", State: lifecycle.RevisionApplying})
			c.revision(lifecycle.RevisionState{Commit: "c3", State: lifecycle.RevisionFailed})
			set("b", health.Degraded)
		}, nil},
		// module states are not the revision's
		{func() {
			c.revision(lifecycle.RevisionState{Commit: "c3", Module: "a", State: lifecycle.RevisionApplied})
		}, nil},
	}
	for i, st := range steps {
		st.do()
		if got := r.take(); !slices.Equal(got, st.want) {
			t.Fatalf("step %d: reports %q, want %q", i, got, st.want)
		}
	}
}
