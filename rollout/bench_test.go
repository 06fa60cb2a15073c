package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/forgetest"
	"github.com/addonops/addon-operator/ring"
)

// benchForge is a local forge answering GitHub's status reads, and a
// GitHub lister (the operator's) reading from it.
func benchForge(b *testing.B) (*forgetest.Server, func() commitstatus.Lister) {
	b.Helper()
	forge := forgetest.New("t0ken")
	b.Cleanup(forge.Close)
	token := filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return forge, func() commitstatus.Lister {
		gh, err := commitstatus.NewGitHub(commitstatus.GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "platform/addons",
			TokenFile: token, AllowHTTP: []string{"127.0.0.1"}})
		if err != nil {
			b.Fatal(err)
		}
		return gh
	}
}

// post is a status of commit from cluster, as its Notifier writes it.
func post(commit, cluster string, ringN int, state commitstatus.State, module string) forgetest.Status {
	ctx, desc := "addon-operator/"+cluster, fmt.Sprintf("[ring %d] %s on %s", ringN, state, cluster)
	if module != "" {
		ctx, desc = ctx+"/"+module, fmt.Sprintf("[ring %d] module %s %s on %s", ringN, module, state, cluster)
	}
	return forgetest.Status{API: "github", Repo: "platform/addons", Commit: commit, Context: ctx, Description: desc, State: "success"}
}

// BenchmarkForgeReadsPerPoll: a fleet of 50 clusters (10 in ring 0, 40
// in ring 1), each an operator with its own gate and ReadCache (TTL the
// poll interval), holding one commit while ring 0 is not all healthy.
// One op is one poll of the whole fleet, in which each cluster asks its
// gate twice (the sync and /status's view). reads/cluster/poll is what
// docs/operator.md, "Fleets" promises: 1 per held commit, times the
// pages (100 statuses a page): with per-module statuses (5 modules a
// cluster, 300 statuses) a read takes 3 pages.
func BenchmarkForgeReadsPerPoll(b *testing.B) {
	for _, modules := range []int{0, 5} {
		b.Run(fmt.Sprintf("50 clusters, %d module statuses each", modules), func(b *testing.B) {
			forge, lister := benchForge(b)
			const commit = "2222222222222222222222222222222222222222"
			var sts []forgetest.Status
			for i := range 50 {
				r, state := 0, commitstatus.Healthy
				if i >= 10 {
					r, state = 1, commitstatus.Held
				} else if i == 9 {
					state = commitstatus.Applied // ring 0 not all healthy yet: ring 1 holds
				}
				sts = append(sts, post(commit, fmt.Sprintf("c%02d", i), r, state, ""))
				for m := range modules {
					sts = append(sts, post(commit, fmt.Sprintf("c%02d", i), r, state, fmt.Sprintf("m%d", m)))
				}
			}
			forge.Inject(sts...)
			now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			p, err := ring.Parse(ring.Spec{Ring: 1})
			if err != nil {
				b.Fatal(err)
			}
			var gates []*Gate
			for range 40 {
				cache := commitstatus.NewReadCache(lister(), commitstatus.ReadCacheOptions{TTL: time.Minute, Now: clock})
				g := New(Options{Lister: cache, Now: clock, Running: func() Running { return Running{Commit: running} }})
				g.Learn(running, &Policy{Ring: &p})
				gates = append(gates, g)
			}
			rev := gitsync.Revision{Commit: commit, Ref: "main", RemoteRef: "refs/heads/main"}
			before := forge.Reads()
			polls := 0
			for b.Loop() {
				now = now.Add(time.Minute) // the next poll: the caches' TTL has passed
				for _, g := range gates {
					for range 2 {
						if d := g.Decide(context.Background(), rev); !d.Held() {
							b.Fatalf("not held: %+v", d)
						}
					}
				}
				polls++
			}
			reads := float64(forge.Reads() - before)
			b.ReportMetric(reads/float64(polls), "requests/poll")
			b.ReportMetric(reads/float64(polls)/40, "requests/cluster/poll")
		})
	}
}

// BenchmarkRingApplyAfterHealthy: the time from ring 0's last healthy
// report reaching the forge to ring 1's gate letting the commit through,
// with the gate asked at each poll (GIT_POLL_INTERVAL, 200ms here, as
// the real-parts test runs) through a ReadCache whose TTL is the
// interval, as cmd wires it (the next poll starts an interval after a
// sync ends, so each poll reads anew). The report lands at a random
// instant of the poll; the wait is bounded by one interval plus a read.
func BenchmarkRingApplyAfterHealthy(b *testing.B) {
	const interval = 200 * time.Millisecond
	forge, lister := benchForge(b)
	p, err := ring.Parse(ring.Spec{Ring: 1})
	if err != nil {
		b.Fatal(err)
	}
	var waits []time.Duration
	i := 0
	for b.Loop() {
		i++
		commit := fmt.Sprintf("%040x", i)
		forge.Inject(post(commit, "r0", 0, commitstatus.Applied, ""))
		cache := commitstatus.NewReadCache(lister(), commitstatus.ReadCacheOptions{TTL: interval})
		g := New(Options{Lister: cache, Running: func() Running { return Running{Commit: running} }})
		g.Learn(running, &Policy{Ring: &p})
		rev := gitsync.Revision{Commit: commit, Ref: "main", RemoteRef: "refs/heads/main"}
		applied := make(chan time.Time, 1)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { // the syncer's poll: the interval counts from a sync's end (gitsync.Syncer.Run)
			for {
				if d := g.Decide(ctx, rev); !d.Held() {
					applied <- time.Now()
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(interval):
				}
			}
		}()
		time.Sleep(interval + time.Duration(rand.Int64N(int64(interval))))
		healthy := time.Now()
		forge.Inject(post(commit, "r0", 0, commitstatus.Healthy, ""))
		select {
		case at := <-applied:
			waits = append(waits, at.Sub(healthy))
		case <-time.After(10 * interval):
			b.Fatal("not applied within 10 polls")
		}
		cancel()
	}
	slices.Sort(waits)
	var sum time.Duration
	for _, w := range waits {
		sum += w
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(waits)), "ms-mean")
	b.ReportMetric(float64(waits[len(waits)*9/10].Milliseconds()), "ms-p90")
	b.ReportMetric(float64(waits[len(waits)-1].Milliseconds()), "ms-max")
}
