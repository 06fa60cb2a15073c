package modulestatus

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/values"
)

func newWriter(trees *runstate.Trees, mods *runstate.Modules, c Client, h Health, d Drift) *Writer {
	return New(Options{Trees: trees, Modules: mods, Client: c, Health: h, Drift: d,
		MinInterval: 20 * time.Millisecond, Now: func() time.Time { return time.Unix(1700000000, 0) }})
}

// A pass writes each module once; a pass with nothing changed writes
// nothing; a change writes that module alone.
func TestPassWritesOnChangeOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha", "beta", "gamma"))
	setState(mods, map[string]runstate.Module{
		"alpha": {Enabled: true, State: runstate.StateReady},
		"beta":  {Enabled: true, State: runstate.StateFailed},
	})
	hl, dr := &fakeHealth{}, fakeDrift{}
	c := newFakeClient()
	w := newWriter(trees, mods, c, hl, dr)
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"alpha", "beta", "gamma"} {
		if c.writes[n] != 1 {
			t.Fatalf("%s written %d times on the first pass, want 1", n, c.writes[n])
		}
	}
	for i := 0; i < 3; i++ {
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.total(); got != 3 {
		t.Fatalf("passes with nothing changed wrote: %d writes in all, want 3", got)
	}
	mods.Update("beta", func(st *runstate.Module) { st.State = runstate.StateReady })
	hl.set("alpha", health.ModuleHealth{Status: health.Healthy, Total: 2})
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if c.writes["alpha"] != 2 || c.writes["beta"] != 2 || c.writes["gamma"] != 1 {
		t.Fatalf("writes after beta and alpha's health changed: %v", c.writes)
	}
	if st, _ := c.get("beta"); cond(st, CondReady) != metav1.ConditionTrue {
		t.Fatalf("beta Ready: %+v", st.Conditions)
	}
}

// Modules that left the tree lose their object, as do objects a previous
// run left for modules no longer in it.
func TestPassDeletesLeftModules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha", "beta"))
	c := newFakeClient("stale", "alpha")
	w := newWriter(trees, mods, c, nil, nil)
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get("stale"); ok {
		t.Fatalf("a previous run's object of a module not in the tree stayed")
	}
	if c.writes["alpha"] != 1 {
		t.Fatalf("a previous run's object of a module in the tree was not rewritten: %v", c.writes)
	}
	if err := trees.Transition(func(*runstate.Tree) (*runstate.Tree, error) { return tree("c2", "alpha"), nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get("beta"); ok {
		t.Fatalf("beta left the tree, its object stayed")
	}
	if st, _ := c.get("alpha"); st.Commit != "c2" {
		t.Fatalf("alpha's commit %q, want c2", st.Commit)
	}
}

// A failed write is retried by the next pass.
func TestPassRetriesFailedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha"))
	c := newFakeClient()
	c.failing = errWrite
	w := newWriter(trees, mods, c, nil, nil)
	if err := w.Pass(ctx); err == nil {
		t.Fatal("a failed write was not reported")
	}
	c.failing = nil
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if c.writes["alpha"] != 1 {
		t.Fatalf("writes after the retry: %v", c.writes)
	}
}

// A burst of announcements is batched: the changes made while the writer
// waits out MinInterval (on the injected clock) are one pass, written once
// the clock has moved MinInterval, and the last change is what is written.
func TestRunBatchesBursts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha"))
	setState(mods, map[string]runstate.Module{"alpha": {Enabled: true, State: runstate.StateRunning}})
	c := newFakeClient()
	clock := testclock.New()
	w := New(Options{Trees: trees, Modules: mods, Client: c, MinInterval: time.Second, BusyInterval: time.Second,
		Resync: 10 * time.Second, Now: clock.Now, After: clock.After})
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	testwait.Until(t, "the first write", func() bool { return c.total() == 1 })
	// the changes of a converge: the first wakes the writer, which then
	// waits MinInterval (its wait beside the resync's)
	const changes = 30
	change := func(i int) {
		mods.Update("alpha", func(st *runstate.Module) { st.LastError = fmt.Sprint("error ", i) })
	}
	change(0)
	testwait.Until(t, "the writer to wait MinInterval", func() bool { return clock.Waiting() == 2 })
	for i := 1; i < changes; i++ {
		change(i)
	}
	clock.Advance(time.Second - time.Millisecond)
	if got := c.total(); got != 1 {
		t.Fatalf("%d writes before MinInterval passed, want 1", got)
	}
	clock.Advance(time.Millisecond)
	testwait.Until(t, "the last change written", func() bool {
		st, _ := c.get("alpha")
		return st.LastError == fmt.Sprint("error ", changes-1)
	})
	if got := c.total(); got != 2 {
		t.Fatalf("%d changes made %d writes, want them one pass (2 writes in all)", changes, got)
	}
	cancel()
	<-done
}

// Health announces nothing: a pass is forced Resync after the last one.
func TestRunResyncs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha"))
	setState(mods, map[string]runstate.Module{"alpha": {Enabled: true, State: runstate.StateReady}})
	c, hl := newFakeClient(), &fakeHealth{}
	clock := testclock.New()
	w := New(Options{Trees: trees, Modules: mods, Client: c, Health: hl, MinInterval: time.Second, Resync: 10 * time.Second,
		Now: clock.Now, After: clock.After})
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	testwait.Until(t, "the first write", func() bool { return c.total() == 1 })
	testwait.Until(t, "the writer to wait for a change or the resync", func() bool { return clock.LongestWait() == 10*time.Second })
	hl.set("alpha", health.ModuleHealth{Status: health.Degraded, Message: "Deployment/x: timeout"})
	clock.Advance(9 * time.Second)
	if got := c.total(); got != 1 {
		t.Fatalf("%d writes before the resync, want 1", got)
	}
	clock.Advance(time.Second) // the resync
	testwait.Until(t, "the writer to wait MinInterval", func() bool { return clock.Waiting() == 1 })
	clock.Advance(time.Second)
	testwait.Until(t, "alpha's health written", func() bool {
		st, _ := c.get("alpha")
		return st.Health != nil && st.Health.Status == string(health.Degraded)
	})
	cancel()
	<-done
}

func cond(st Status, typ string) metav1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// The conditions of each state, in kstatus's form.
func TestConditions(t *testing.T) {
	t.Parallel()
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	for _, tc := range []struct {
		name                                        string
		in                                          input
		ready, reconciling, stalled, healthy, drift metav1.ConditionStatus
	}{
		{"disabled", input{}, F, F, F, U, F},
		{"pending", input{known: true, state: runstate.Module{Enabled: true, State: runstate.StatePending}}, F, T, F, U, F},
		{"ready, not tracked", input{known: true, state: runstate.Module{Enabled: true, State: runstate.StateReady}}, T, F, F, U, F},
		{"ready, healthy, drifted", input{known: true, state: runstate.Module{Enabled: true, State: runstate.StateReady},
			health: &health.ModuleHealth{Status: health.Healthy}, drift: 2}, T, F, F, T, T},
		{"ready, progressing", input{known: true, state: runstate.Module{Enabled: true, State: runstate.StateReady},
			health: &health.ModuleHealth{Status: health.Progressing}}, F, T, F, F, F},
		{"ready, degraded", input{known: true, state: runstate.Module{Enabled: true, State: runstate.StateReady},
			health: &health.ModuleHealth{Status: health.Degraded, Message: "Deployment/x: timeout"}}, F, F, T, F, F},
		{"failed", input{known: true, state: runstate.Module{Enabled: true, State: runstate.StateFailed, LastError: "hook a.sh: exit 1\nmore"}}, F, F, T, U, F},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := build(tc.in)
			for typ, want := range map[string]metav1.ConditionStatus{CondReady: tc.ready, CondReconciling: tc.reconciling,
				CondStalled: tc.stalled, CondHealthy: tc.healthy, CondDrifted: tc.drift} {
				if got := cond(st, typ); got != want {
					t.Errorf("%s = %s, want %s (%+v)", typ, got, want, st.Conditions)
				}
			}
			if st.LastError != "" && st.LastError != "hook a.sh: exit 1" {
				t.Errorf("last error not one line: %q", st.LastError)
			}
		})
	}
}

// The health's objects not Current: counted whole, a few named.
func TestHealthObjects(t *testing.T) {
	t.Parallel()
	h := &health.ModuleHealth{Status: health.Progressing, Total: 9}
	for i := 0; i < 5; i++ {
		o := health.ObjectHealth{Status: "InProgress"}
		o.Kind, o.Namespace, o.Name = "Deployment", "ns", fmt.Sprint("d", i)
		h.Objects = append(h.Objects, o)
	}
	st := build(input{known: true, state: runstate.Module{Enabled: true, State: runstate.StateReady}, health: h})
	if st.Health.NotCurrent != 5 || len(st.Health.Objects) != maxObjects {
		t.Fatalf("health %+v", st.Health)
	}
}

// A re-run of what a module was Ready on (a reload after a global change)
// writes nothing; a re-run after its own files or config section changed
// shows Reconciling, and a failed re-run shows Stalled.
func TestPassRerunOfSameInputsWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	tr := tree("c1", "alpha", "beta")
	tr.Model.Modules[0].Key, tr.Model.Modules[1].Key = "alpha", "beta"
	tr.ConfigData = map[string]string{"alpha": "a: 1\n", "beta": "b: 1\n"}
	trees.Start(tr)
	ready := map[string]runstate.Module{
		"alpha": {Enabled: true, State: runstate.StateReady},
		"beta":  {Enabled: true, State: runstate.StateReady},
	}
	setState(mods, ready)
	c := newFakeClient()
	w := newWriter(trees, mods, c, &fakeHealth{}, fakeDrift{})
	pass := func() {
		t.Helper()
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	for _, s := range []runstate.ModuleState{runstate.StatePending, runstate.StateRunning, runstate.StateReady} {
		for _, n := range []string{"alpha", "beta"} {
			mods.Update(n, func(st *runstate.Module) { st.State = s })
		}
		pass()
	}
	if got := c.total(); got != 2 {
		t.Fatalf("a re-run of the same inputs wrote: %v, want one write each", c.writes)
	}
	// beta's section changes: its re-run is Reconciling
	next := *tr
	next.ConfigData = map[string]string{"alpha": "a: 1\n", "beta": "b: 2\n"}
	trees.Start(&next)
	mods.Update("beta", func(st *runstate.Module) { st.State = runstate.StateRunning })
	mods.Update("alpha", func(st *runstate.Module) { st.State = runstate.StateRunning })
	pass()
	if st, _ := c.get("beta"); cond(st, CondReconciling) != metav1.ConditionTrue || cond(st, CondReady) != metav1.ConditionFalse {
		t.Fatalf("beta re-running on a changed section: %+v", st.Conditions)
	}
	if st, _ := c.get("alpha"); cond(st, CondReady) != metav1.ConditionTrue {
		t.Fatalf("alpha re-running on the same inputs: %+v", st.Conditions)
	}
	// alpha's re-run fails: Stalled, whatever its inputs
	mods.Update("alpha", func(st *runstate.Module) { st.State, st.LastError = runstate.StateFailed, "hook a: exit 1" })
	pass()
	if st, _ := c.get("alpha"); cond(st, CondStalled) != metav1.ConditionTrue {
		t.Fatalf("alpha failed: %+v", st.Conditions)
	}
}

// While a converge is under way the writer keeps off the API server the
// converge waits on: a module still waiting its turn gets no object yet,
// and passes are BusyInterval apart (idle, MinInterval: TestRunResyncs).
func TestRunWritesLessDuringAConverge(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha", "beta", "gamma"))
	setState(mods, map[string]runstate.Module{
		"alpha": {Enabled: true, State: runstate.StateReady},
		"beta":  {Enabled: true, State: runstate.StateRunning},
		"gamma": {Enabled: true, State: runstate.StatePending},
	})
	c := newFakeClient()
	clock := testclock.New()
	w := New(Options{Trees: trees, Modules: mods, Client: c, MinInterval: time.Second, BusyInterval: 5 * time.Second,
		Resync: 10 * time.Second, Now: clock.Now, After: clock.After})
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	testwait.Until(t, "the first pass", func() bool { return c.total() == 2 })
	if _, ok := c.get("gamma"); ok {
		t.Fatal("gamma, waiting its turn, was created during the converge")
	}
	mods.Update("beta", func(st *runstate.Module) { st.State = runstate.StateReady })
	mods.Update("gamma", func(st *runstate.Module) { st.State = runstate.StateRunning })
	testwait.Until(t, "the writer to wait BusyInterval", func() bool {
		return clock.Waiting() == 2 && clock.LongestWait() == 10*time.Second && clock.ShortestWait() == 5*time.Second
	})
	clock.Advance(4 * time.Second)
	if got := c.total(); got != 2 {
		t.Fatalf("%d writes within BusyInterval, want 2", got)
	}
	clock.Advance(time.Second)
	testwait.Until(t, "gamma created, running", func() bool { _, ok := c.get("gamma"); return ok && c.total() == 4 })
	cancel()
	<-done
}

// A module that keeps waiting because the converge stalls (a module ahead
// of it failing and retried, a hook that hangs) gets its object, Pending,
// once it has waited PendingGrace: `kubectl get modules` lists it.
func TestPassCreatesAModuleLeftWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha", "beta"))
	setState(mods, map[string]runstate.Module{
		"alpha": {Enabled: true, State: runstate.StateFailed},
		"beta":  {Enabled: true, State: runstate.StatePending},
	})
	c := newFakeClient()
	clock := testclock.New()
	w := New(Options{Trees: trees, Modules: mods, Client: c, PendingGrace: time.Minute, Now: clock.Now, After: clock.After})
	for _, tc := range []struct {
		advance time.Duration
		created bool
	}{
		{0, false},                // waiting its turn
		{59 * time.Second, false}, // still within the grace
		{time.Second, true},       // waited long enough: shown Pending
	} {
		clock.Advance(tc.advance)
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		st, ok := c.get("beta")
		if ok != tc.created {
			t.Fatalf("after %s: beta created %v, want %v", tc.advance, ok, tc.created)
		}
		if ok && st.State != string(runstate.StatePending) {
			t.Fatalf("beta: state %q, want Pending", st.State)
		}
	}
}

// A commit that changes only a module's section of the common values file
// ($MODULES_DIR/values.yaml: neither its files nor the ConfigMap) changes
// its inputs: its re-run is Reconciling, not Ready on what it ran before.
func TestPassRerunOnCommonValuesIsReconciling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	tr := tree("c1", "alpha")
	tr.Model.Modules[0].Key = "alpha"
	tr.Model.Values.Common = values.Values{"alpha": map[string]any{"replicas": 1}, "alphaEnabled": true}
	trees.Start(tr)
	setState(mods, map[string]runstate.Module{"alpha": {Enabled: true, State: runstate.StateReady}})
	c := newFakeClient()
	w := newWriter(trees, mods, c, &fakeHealth{}, fakeDrift{})
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		common      values.Values
		reconciling metav1.ConditionStatus
	}{
		{"the same common values", values.Values{"alphaEnabled": true, "alpha": map[string]any{"replicas": 1}}, metav1.ConditionFalse},
		{"its section changed", values.Values{"alpha": map[string]any{"replicas": 2}, "alphaEnabled": true}, metav1.ConditionTrue},
	} {
		next := *tr
		model := *tr.Model
		model.Values.Common = tc.common
		next.Model, next.Rev.Commit = &model, "c2"
		trees.Start(&next)
		mods.Update("alpha", func(st *runstate.Module) { st.State = runstate.StateRunning })
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.get("alpha"); cond(st, CondReconciling) != tc.reconciling {
			t.Fatalf("%s: Reconciling %s, want %s: %+v", tc.name, cond(st, CondReconciling), tc.reconciling, st.Conditions)
		}
	}
}

// A Module object deleted by hand is written again within Relist, though
// its module's status did not change (a pass with nothing changed writes
// nothing, so only a list finds it gone).
func TestPassRewritesAnObjectDeletedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	trees, mods := &runstate.Trees{}, runstate.NewModules()
	trees.Start(tree("c1", "alpha"))
	setState(mods, map[string]runstate.Module{"alpha": {Enabled: true, State: runstate.StateReady}})
	c := newFakeClient()
	clock := testclock.New()
	w := New(Options{Trees: trees, Modules: mods, Client: c, Relist: time.Minute, Now: clock.Now, After: clock.After})
	if err := w.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	delete(c.objects, "alpha") // kubectl delete module/alpha
	c.mu.Unlock()
	for _, tc := range []struct {
		advance time.Duration
		there   bool
	}{
		{10 * time.Second, false}, // a resync: nothing changed, nothing listed
		{50 * time.Second, true},  // Relist after the last list: listed, written again
	} {
		clock.Advance(tc.advance)
		if err := w.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.get("alpha"); ok != tc.there {
			t.Fatalf("after %s: alpha's object there %v, want %v", tc.advance, ok, tc.there)
		}
	}
	if got := c.writes["alpha"]; got != 2 {
		t.Fatalf("alpha written %d times, want 2", got)
	}
}
