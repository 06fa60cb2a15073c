package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/forgetest"
)

// fleetCluster is one operator of a fleet: its namespace, cluster name
// and address.
type fleetCluster struct {
	name, ns, addr string
}

// alpha is the cluster's module alpha value and running revision.
func (c fleetCluster) at(t *testing.T, value, commit string) bool {
	return cmValue(c.ns, "001-alpha-cm") == value && status(t, c.addr)["revision"] == commit
}

// TestFleetRings (docs/operator.md, "Fleets"): three operators on one
// control plane, each in its namespace with its cluster's config in one
// repository (r0 in ring 0, r1a in ring 1 listing r0, r1b in ring 1 by
// the rings the statuses carry), posting to and reading from one forge.
// A commit reaches ring 0 at once; ring 1 waits ("waiting for ring 0",
// on /status and its commit status) while r0 is suspended (the CLI), and
// applies once r0, resumed with kubectl alone, posts healthy. A commit
// that fails on r0 never reaches ring 1, whose /status and commit status
// say it stopped. A fix, applied by r0 and then r1a, waits on r1b while
// r1b is suspended with kubectl, and applies on `source resume`.
func TestFleetRings(t *testing.T) {
	f := newForgeSetup(t, "fleet-r0")
	repo := f.repo
	const ring1Listed = "addon-operator:\n  rollout:\n    ring: 1\n    previousRing: [r0]\n"
	c1 := commitFiles(t, repo, "the fleet", map[string]string{
		"clusters/r0/config.yaml":  "addon-operator:\n  rollout:\n    ring: 0\n",
		"clusters/r1a/config.yaml": ring1Listed,
		"clusters/r1b/config.yaml": "addon-operator:\n  rollout: {ring: 1, healthy: all}\n",
	})
	clusters := []fleetCluster{{name: "r0", ns: f.ns}, {name: "r1a", ns: namespace(t, "fleet-r1a")}, {name: "r1b", ns: namespace(t, "fleet-r1b")}}
	for i, c := range clusters {
		env := []string{"ADDON_OPERATOR_NAMESPACE=" + c.ns, "GIT_URL=" + f.srv.URL("addons"), "GIT_REF=main",
			"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR=" + filepath.Join(t.TempDir(), "checkout"),
			"ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=github", "ADDON_OPERATOR_COMMIT_STATUS_URL=" + f.forge.GitHubURL(),
			"ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons", "ADDON_OPERATOR_COMMIT_STATUS_TOKEN_FILE=" + f.token,
			"ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS=127.0.0.1",
			"ADDON_OPERATOR_CLUSTER_NAME=" + c.name, "ADDON_OPERATOR_CLUSTER_CONFIG=clusters/{cluster}/config.yaml"}
		clusters[i].addr = startOperator(t, env...).addr
	}
	r0, r1a, r1b := clusters[0], clusters[1], clusters[2]
	for _, c := range clusters {
		eventually(t, c.name+" on c1", func() bool { return c.at(t, "1", c1) })
	}
	eventually(t, "c1's statuses carry the rings", func() bool {
		return strings.HasPrefix(f.description(c1, "r0"), "[ring 0] healthy on r0") &&
			strings.HasPrefix(f.description(c1, "r1a"), "[ring 1] healthy on r1a")
	})

	// r0 suspended (the CLI): c2 held everywhere, ring 1 waits for ring 0
	sourceCLI(t, r0.ns, "suspend", "--reason", "canary on hold")
	eventually(t, "r0 suspended", func() bool { return sourceOf(t, r0.addr)["suspended"] != nil })
	c2 := commitFiles(t, repo, "alpha v2", alphaOn("2"))
	for _, c := range []fleetCluster{r1a, r1b} {
		eventually(t, c.name+" waits for ring 0", func() bool {
			got := heldBy(t, c.addr)
			return len(got) == 1 && got[0] == "ring "+c2 &&
				f.description(c2, c.name) == "[ring 1] held on "+c.name+": waiting for ring 0 (0 of 1 healthy)"
		})
	}
	if d := f.description(c2, "r0"); d != "[ring 0] held on r0: suspended: canary on hold" {
		t.Fatalf("r0's status of c2: %q", d)
	}
	if _, body := get(r1a.addr, "/metrics"); !strings.Contains(body, `addon_operator_source_held{by="ring"} 1`) {
		t.Fatal(`r1a: addon_operator_source_held{by="ring"} is not 1`)
	}
	if r, _ := sourceOf(t, r1a.addr)["rollout"].(map[string]any); r == nil || r["ring"] != 1.0 || r["policy"] != "ring 1 after all of ring 0 healthy (r0)" {
		t.Fatalf("r1a /status source.rollout = %v", r)
	}

	// r0 resumed with kubectl alone: c2 reaches r0, then ring 1 once r0 is healthy
	editSource(t, r0.ns, func(d map[string]string) { delete(d, "suspended") })
	eventually(t, "r0 on c2", func() bool { return r0.at(t, "2", c2) })
	for _, c := range []fleetCluster{r1a, r1b} {
		eventually(t, c.name+" on c2", func() bool { return c.at(t, "2", c2) })
	}
	healthyAt, appliedAt := postedAt(f.forge, c2, "r0", "[ring 0] healthy"), postedAt(f.forge, c2, "r1a", "[ring 1] applying")
	if healthyAt.IsZero() || appliedAt.Before(healthyAt) {
		t.Fatalf("r1a began applying c2 at %s, r0 posted healthy at %s", appliedAt, healthyAt)
	}
	// docs/benchmarks.md, "Fleets": the wait, bounded by the poll (200ms)
	t.Logf("r1a began applying c2 %s after r0 posted healthy", appliedAt.Sub(healthyAt).Round(time.Millisecond))

	// a commit that fails on r0 never reaches ring 1
	c3 := commitFiles(t, repo, "alpha breaks", alphaHook("exit 1"))
	eventually(t, "r0 failed on c3", func() bool {
		return status(t, r0.addr)["revision"] == c3 && strings.HasPrefix(f.description(c3, "r0"), "[ring 0] failed on r0")
	})
	const stopped = "stopped: r0 of ring 0 reported failed"
	for _, c := range []fleetCluster{r1a, r1b} {
		eventually(t, c.name+" stopped", func() bool {
			last, _ := rolloutOf(t, c.addr)["last"].(map[string]any)
			return last != nil && last["commit"] == c3 && last["reason"] == stopped &&
				f.description(c3, c.name) == "[ring 1] held on "+c.name+": "+stopped
		})
	}
	reads := f.forge.Reads()
	eventually(t, "more polls of ring 1", func() bool { return f.forge.Reads() >= reads+6 })
	for _, c := range []fleetCluster{r1a, r1b} {
		if !c.at(t, "2", c2) {
			t.Fatalf("%s left c2 for a commit ring 0 reported failed", c.name)
		}
	}

	// r1b suspended with kubectl: the fix reaches r0 and r1a, not r1b
	// until `source resume`
	editSource(t, r1b.ns, func(d map[string]string) { d["suspended"] = "true" })
	eventually(t, "r1b suspended", func() bool { return sourceOf(t, r1b.addr)["suspended"] != nil })
	c4 := commitFiles(t, repo, "alpha fixed", merge(alphaOn("4"), alphaHook("exit 0")))
	eventually(t, "r0 and r1a on c4", func() bool { return r0.at(t, "4", c4) && r1a.at(t, "4", c4) })
	eventually(t, "r1b holds c4 by suspend", func() bool {
		got := heldBy(t, r1b.addr)
		return len(got) == 1 && got[0] == "suspend "+c4
	})
	sourceCLI(t, r1b.ns, "resume")
	eventually(t, "r1b on c4", func() bool { return r1b.at(t, "4", c4) })
	if n := f.forge.Reads(); n == 0 {
		t.Fatal("no status read from the forge")
	}
}

// postedAt is when the forge accepted the first status of commit on
// cluster whose description starts with prefix (zero: none).
func postedAt(forge *forgetest.Server, commit, cluster, prefix string) time.Time {
	for _, s := range forge.Statuses() {
		if s.Commit == commit && s.Context == "addon-operator/"+cluster && strings.HasPrefix(s.Description, prefix) {
			return s.Time
		}
	}
	return time.Time{}
}
