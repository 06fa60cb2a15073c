package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeadershipLost says the Lease was lost while leading (it could not be
// renewed in time, or another holder took it): the caller must stop acting
// on the cluster, which in practice means ending the process.
var ErrLeadershipLost = errors.New("leader election: lease lost")

// LeaderOptions configure leader election on a coordination.k8s.io Lease.
type LeaderOptions struct {
	Namespace, Name string
	// Identity names this candidate in the Lease (default: the host name
	// and a random suffix, so a restarted pod is a new candidate).
	Identity string
	// LeaseDuration is how long a holder that stopped renewing keeps the
	// Lease (default 15s); renewal gives up after 2/3 of it and candidates
	// retry every 2/15 of it, client-go's usual proportions.
	LeaseDuration time.Duration
	Logger        *slog.Logger
}

// Leader runs work only while this process holds the Lease.
type Leader struct {
	client  kubernetes.Interface
	opts    LeaderOptions
	leading atomic.Bool

	mu     sync.Mutex
	holder string // the last holder observed
}

// NewLeader prepares leader election; Run takes part in it.
func NewLeader(client kubernetes.Interface, opts LeaderOptions) (*Leader, error) {
	if opts.Namespace == "" || opts.Name == "" {
		return nil, errors.New("leader election: the Lease needs a namespace and a name")
	}
	if opts.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("leader election identity: %w", err)
		}
		opts.Identity = host + "_" + string(uuid.NewUUID())
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Leader{client: client, opts: opts}, nil
}

// Run waits for the Lease, then calls run with a context that ends when
// ctx does or the Lease is lost. When ctx ends, the Lease is released only
// after run has returned, so a successor never acts while this process
// still does (hooks being killed, a Helm call finishing). When the Lease
// is lost, a successor may already act: Run returns ErrLeadershipLost
// after a short grace (lostGrace) whether run returned or not, and the
// caller must end the process at once, which stops what run still does
// (a Helm install or upgrade does not stop on its context). It returns nil
// when ctx ended before this process led, and run's own error otherwise.
func (l *Leader) Run(ctx context.Context, run func(context.Context) error) error {
	// the election outlives ctx until run has stopped: cancelling it is
	// what releases the Lease
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	started := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: l.opts.Namespace, Name: l.opts.Name},
			Client:     l.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.opts.Identity},
		},
		LeaseDuration:   l.opts.LeaseDuration,
		RenewDeadline:   l.opts.LeaseDuration * 2 / 3,
		RetryPeriod:     l.opts.LeaseDuration * 2 / 15,
		ReleaseOnCancel: true,
		Name:            l.opts.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				l.leading.Store(true)
				started <- lctx
			},
			OnStoppedLeading: func() { l.leading.Store(false) },
			OnNewLeader: func(id string) {
				l.mu.Lock()
				l.holder = id
				l.mu.Unlock()
				l.opts.Logger.Info("leader elected", "lease", l.opts.Name, "leader", id, "self", id == l.opts.Identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		elector.Run(electCtx)
	}()
	l.opts.Logger.Info("waiting for the leader lease", "lease", l.opts.Name, "namespace", l.opts.Namespace, "identity", l.opts.Identity)

	var leadCtx context.Context
	select {
	case <-ctx.Done():
		stopElection()
		<-electionDone
		return nil
	case leadCtx = <-started:
	}
	runCtx, cancel := context.WithCancel(leadCtx)
	stopOnCtx := context.AfterFunc(ctx, cancel)
	defer stopOnCtx()
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- run(runCtx) }()
	select {
	case err = <-runDone:
	case <-leadCtx.Done():
		if ctx.Err() != nil {
			err = <-runDone // stopping: see ctx.Done below
			break
		}
		// Lost: a successor may act from now on. Work that stops on its
		// context (hooks are killed) has a moment to; a Helm write does
		// not stop, so the caller must end the process, which is the fence
		// (docs/operator.md, "Leader election").
		timer := time.NewTimer(l.lostGrace())
		select {
		case <-runDone:
		case <-timer.C:
			l.opts.Logger.Error("work still running after the lease was lost; the process must end now", "lease", l.opts.Name)
		}
		timer.Stop()
		stopElection()
		<-electionDone
		l.opts.Logger.Error("leader lease lost; stopping, so that only its holder acts on the cluster", "lease", l.opts.Name)
		return ErrLeadershipLost
	case <-ctx.Done():
		// stopping: the work ends first (a Helm write finishes), then the
		// Lease is released
		err = <-runDone
	}
	lost := leadCtx.Err() != nil && ctx.Err() == nil
	stopElection()
	<-electionDone
	if lost {
		l.opts.Logger.Error("leader lease lost; stopping, so that only its holder acts on the cluster", "lease", l.opts.Name)
		return ErrLeadershipLost
	}
	return err
}

// lostGrace is how long Run waits for the work once the Lease is lost:
// 1/15 of the lease duration (1 s by default), half a retry period, well
// before a successor that saw the Lease expire acts.
func (l *Leader) lostGrace() time.Duration { return l.opts.LeaseDuration / 15 }

// Leading says whether this process holds the Lease now.
func (l *Leader) Leading() bool { return l.leading.Load() }

// Status is the election's part of /status.
func (l *Leader) Status() map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return map[string]any{
		"lease":    l.opts.Namespace + "/" + l.opts.Name,
		"identity": l.opts.Identity,
		"leader":   l.holder,
		"leading":  l.leading.Load(),
	}
}
