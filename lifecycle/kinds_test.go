package lifecycle

import (
	"testing"
	"time"
)

// The reload's phase answers what the queue's contents answered: whether a
// reload waits, is under way, or will report the revision.
func TestReloadPhase(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	type want struct{ waiting, underWay, reporting, converged bool }
	steps := []struct {
		name string
		do   func(r *reloadPhase)
		want want
		p    phase
	}{
		{"start", func(*reloadPhase) {}, want{}, phaseIdle},
		{"reload queued", (*reloadPhase).askReload, want{waiting: true, underWay: true, reporting: true}, phaseIdle},
		{"reload begins", func(r *reloadPhase) { r.begin(phaseReloading, now) }, want{underWay: true, reporting: true}, phaseReloading},
		{"discovery", func(r *reloadPhase) { r.enter(phaseDiscovering) }, want{underWay: true, reporting: true}, phaseDiscovering},
		{"modules run", func(r *reloadPhase) { r.enter(phaseConverging) }, want{underWay: true, reporting: true}, phaseConverging},
		{"another reload asked meanwhile", (*reloadPhase).askReload, want{waiting: true, underWay: true, reporting: true}, phaseConverging},
		{"converged", func(r *reloadPhase) { r.end(now.Add(time.Second)) }, want{waiting: true, underWay: true, reporting: true, converged: true}, phaseIdle},
		{"the second begins", func(r *reloadPhase) { r.begin(phaseReloading, now) }, want{underWay: true, reporting: true, converged: true}, phaseReloading},
		{"and converges", func(r *reloadPhase) { r.end(now) }, want{converged: true}, phaseIdle},
		// a module-scoped reload: queued, it reports but leaves a
		// tree change module-scoped; running, it is under way
		{"changed modules queued", (*reloadPhase).askChanged, want{reporting: true, converged: true}, phaseIdle},
		{"changed modules run", func(r *reloadPhase) { r.begin(phaseConverging, now); r.changedDone() }, want{underWay: true, reporting: true, converged: true}, phaseConverging},
		{"changed modules converged", func(r *reloadPhase) { r.end(now) }, want{converged: true}, phaseIdle},
		// a reload replaces a module-scoped one still waiting
		{"changed queued again", (*reloadPhase).askChanged, want{reporting: true, converged: true}, phaseIdle},
		{"a reload pre-empts it", func(r *reloadPhase) { r.askReload(); r.begin(phaseReloading, now); r.end(now) }, want{converged: true}, phaseIdle},
		// a purge's report
		{"report queued", (*reloadPhase).askReport, want{reporting: true, converged: true}, phaseIdle},
		{"reported", (*reloadPhase).reported, want{converged: true}, phaseIdle},
	}
	r := newReloadPhase()
	for _, s := range steps {
		s.do(r)
		got := want{r.reloadWaiting(), r.underWay(), r.reporting(), closed(r.convergedCh())}
		if got != s.want {
			t.Errorf("%s: got %+v, want %+v", s.name, got, s.want)
		}
		if p, _, _, _, _ := r.get(); p != s.p {
			t.Errorf("%s: phase %s, want %s", s.name, p, s.p)
		}
	}
}

func TestReloadPhaseEnd(t *testing.T) {
	t.Parallel()
	r := newReloadPhase()
	start := time.Unix(1000, 0)
	r.begin(phaseReloading, start)
	r.changedGlobal()
	took, first, again := r.end(start.Add(3 * time.Second))
	if took != 3*time.Second || !first || !again {
		t.Errorf("first end = %s, %v, %v; want 3s, first, again", took, first, again)
	}
	r.begin(phaseReloading, start)
	if _, first, again := r.end(start); first || again {
		t.Errorf("second end: first %v, again %v; want neither (a new reload forgets afterAll's changes)", first, again)
	}
}
