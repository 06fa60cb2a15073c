package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testenv"
)

// leaderRun records when a candidate's work started and stopped.
type leaderRun struct {
	started, stopped chan time.Time
	// shutdown is how long the work takes to stop once its context ends
	shutdown time.Duration
}

func newLeaderRun(shutdown time.Duration) *leaderRun {
	return &leaderRun{started: make(chan time.Time, 1), stopped: make(chan time.Time, 1), shutdown: shutdown}
}

func (r *leaderRun) run(ctx context.Context) error {
	r.started <- time.Now()
	<-ctx.Done()
	time.Sleep(r.shutdown)
	r.stopped <- time.Now()
	return nil
}

func receive(t *testing.T, what string, ch <-chan time.Time, within time.Duration) time.Time {
	t.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(within):
		t.Fatalf("timed out waiting for %s", what)
	}
	return time.Time{}
}

// TestLeaderHandOverAndLoss runs two candidates for one Lease against the
// real API server: the second waits while the first leads; when the first
// is stopped, the second leads only after the first's work has returned,
// and well before the Lease would have expired; a Lease taken by another
// holder ends the leader's work with ErrLeadershipLost.
func TestLeaderHandOverAndLoss(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	const lease = 3 * time.Second
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	newCandidate := func(id string) *Leader {
		l, err := NewLeader(client, LeaderOptions{Namespace: ns, Name: "operator", Identity: id, LeaseDuration: lease, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newCandidate("a"), newCandidate("b")
	runA, runB := newLeaderRun(500*time.Millisecond), newLeaderRun(0)

	ctxA, stopA := context.WithCancel(t.Context())
	defer stopA()
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA, runA.run) }()
	receive(t, "a to lead", runA.started, 10*time.Second)
	if !a.Leading() {
		t.Fatal("a runs but does not say it leads")
	}

	doneB := make(chan error, 1)
	go func() { doneB <- b.Run(t.Context(), runB.run) }()
	select {
	case <-runB.started:
		t.Fatal("b started while a held the Lease")
	case <-time.After(2 * lease):
	}
	if st := b.Status(); st["leader"] != "a" || st["leading"] != false || st["identity"] != "b" {
		t.Fatalf("b's status = %v", st)
	}

	stopA()
	stoppedA := receive(t, "a's work to stop", runA.stopped, 10*time.Second)
	startedB := receive(t, "b to lead", runB.started, lease)
	if startedB.Before(stoppedA) {
		t.Fatalf("b started %v before a's work stopped", stoppedA.Sub(startedB))
	}
	if err := <-doneA; err != nil {
		t.Fatalf("a's Run after its context ended: %v", err)
	}

	// another holder takes the Lease: b must stop and say why
	if err := testenv.TakeLease(t.Context(), client, ns, "operator", "intruder"); err != nil {
		t.Fatal(err)
	}
	receive(t, "b's work to stop", runB.stopped, 2*lease)
	select {
	case err := <-doneB:
		if !errors.Is(err, ErrLeadershipLost) {
			t.Fatalf("b's Run = %v, want ErrLeadershipLost", err)
		}
	case <-time.After(lease):
		t.Fatal("b's Run did not return")
	}
	if b.Leading() {
		t.Fatal("b still says it leads")
	}
}
