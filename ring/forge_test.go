package ring

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/internal/forgetest"
	"github.com/addonops/addon-operator/internal/testwait"
)

const commitA = "0123456789abcdef0123456789abcdef01234567"

// The whole chain on the local forge: ring 0's clusters post through
// their Notifiers (with Options.Ring), ring 1 and 2's gates read the
// statuses once per poll through one ReadCache and decide.
func TestGateOnTheForge(t *testing.T) {
	forge := forgetest.New("tok")
	defer forge.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	gh, err := commitstatus.NewGitHub(commitstatus.GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "fleet/addons",
		TokenFile: token, AllowHTTP: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notifier := func(cluster string, ring int) *commitstatus.Notifier {
		n, err := commitstatus.New(commitstatus.Options{Provider: gh, Cluster: cluster, Ring: &ring, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		go n.Run(ctx)
		return n
	}
	canaryA, canaryB := notifier("canary-a", 0), notifier("canary-b", 0)

	now := time.Now()
	reads := commitstatus.NewReadCache(gh, commitstatus.ReadCacheOptions{TTL: time.Minute, Now: func() time.Time { return now }})
	ring1 := policy(t, Spec{Ring: 1})
	ring2 := policy(t, Spec{Ring: 2})
	poll := func(p Policy) Decision {
		st, err := reads.Statuses(context.Background(), commitA)
		return p.Decide(Input{Statuses: st, ReadErr: err, Now: now})
	}
	posted := func(n int) {
		testwait.Until(t, "the forge to hold the statuses", func() bool { return len(forge.Statuses()) == n })
		now = now.Add(time.Minute) // the next poll reads again
	}

	canaryA.Report(commitstatus.Report{Commit: commitA, State: commitstatus.Healthy})
	canaryB.Report(commitstatus.Report{Commit: commitA, State: commitstatus.Applying})
	posted(2)
	before := forge.Reads()
	if d := poll(ring1); d.Verdict != Wait || d.Reason != "waiting for ring 0 (1 of 2 healthy)" {
		t.Fatalf("ring 1: %+v", d)
	}
	if d := poll(ring2); d.Verdict != Wait || d.Reason != "waiting for ring 1 (no cluster of ring 1 has reported this commit)" {
		t.Fatalf("ring 2: %+v", d)
	}
	if n := forge.Reads() - before; n != 1 {
		t.Fatalf("two gates in one poll read %d times, want 1", n)
	}

	canaryB.Report(commitstatus.Report{Commit: commitA, State: commitstatus.Healthy})
	posted(3)
	if d := poll(ring1); d.Verdict != Apply {
		t.Fatalf("ring 1 after ring 0 healthy: %+v", d)
	}

	canaryB.Report(commitstatus.Report{Commit: commitA, State: commitstatus.Degraded, Reason: "module cert-manager: Deployment not ready"})
	posted(4)
	if d := poll(ring1); d.Verdict != Stop || d.StoppedBy != "canary-b" {
		t.Fatalf("ring 1 after ring 0 degraded: %+v", d)
	}

	// a forge that rate-limits or fails holds, never applies
	canaryB.Report(commitstatus.Report{Commit: commitA, State: commitstatus.Healthy})
	posted(5)
	for _, f := range []forgetest.Failure{{Code: 429, RetryAfter: "30"}, {Code: 503, Body: "down"}} {
		forge.Fail(f)
		if d := poll(ring1); d.Verdict != Wait {
			t.Fatalf("forge answering %d: %+v", f.Code, d)
		}
		now = now.Add(time.Minute)
	}
	if d := poll(ring1); d.Verdict != Apply {
		t.Fatalf("forge back: %+v", d)
	}
}
