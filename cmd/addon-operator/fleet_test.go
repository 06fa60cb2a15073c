package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/changewindow"
	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/rollout"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const (
	fleetRunning   = "1111111111111111111111111111111111111111"
	fleetCandidate = "2222222222222222222222222222222222222222"
)

// reports collects what a Reporter is told.
type reports struct {
	mu  sync.Mutex
	got []commitstatus.Report
}

func (r *reports) Report(rep commitstatus.Report) {
	r.mu.Lock()
	r.got = append(r.got, rep)
	r.mu.Unlock()
}

// testFleet is a fleet whose running revision is fleetRunning, under a
// deny window open now, reporting to rep and recording events.
func testFleet(t *testing.T, rep *reports, tap *revisionTap, events *[]string) *fleet {
	t.Helper()
	now := time.Date(2026, 11, 25, 12, 30, 0, 0, time.UTC)
	f := &fleet{ctx: context.Background(), tap: tap, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		now: func() time.Time { return now }, acting: func() bool { return true }, report: rep.Report,
		event: func(_ context.Context, reason, msg string) { *events = append(*events, reason+": "+msg) }}
	f.gate = rollout.New(rollout.Options{Now: f.now, ApplyNow: f.applyNow,
		Running: func() rollout.Running {
			return rollout.Running{Commit: fleetRunning, Broken: tap.broken(fleetRunning)}
		}})
	specs := []changewindow.Spec{{Name: "freeze", Kind: changewindow.Deny, Schedule: "0 12 * * *", Duration: "2h"}}
	set, err := changewindow.Parse(specs, now)
	if err != nil {
		t.Fatal(err)
	}
	f.gate.Learn(fleetRunning, &rollout.Policy{Windows: set, Specs: specs})
	return f
}

func TestFleetHoldReportsAndApplyNowEventOnce(t *testing.T) {
	rep := &reports{}
	var events []string
	tap := newRevisionTap(nil)
	f := testFleet(t, rep, tap, &events)
	rev := gitsync.Revision{Commit: fleetCandidate, Ref: "main", RemoteRef: "refs/heads/main"}
	holds := f.hold(rev)
	if len(holds) != 1 || holds[0].By != heldByWindow {
		t.Fatalf("holds %+v, want the window's", holds)
	}
	if len(rep.got) != 1 || rep.got[0].State != commitstatus.Held || !strings.HasPrefix(rep.got[0].Reason, `held by window "freeze" (deny) until 2026-11-25T14:00:00Z`) {
		t.Fatalf("reported %+v", rep.got)
	}
	if rv, wv := f.views(fleetRunning); rv == nil || wv == nil || wv.Open || wv.HeldBy != "freeze" || rv.Last == nil || !rv.Last.Held() {
		t.Fatalf("views %+v %+v", rv, wv)
	}
	f.update(map[string]string{sourceApplyNowKey: fleetCandidate[:8], sourceApplyNowByKey: "alice", sourceApplyNowAtKey: "2026-11-25T12:29:00Z", sourceApplyNowReasonKey: "INC-42"})
	for range 3 {
		if holds := f.hold(rev); len(holds) != 0 {
			t.Fatalf("apply-now: held %+v", holds)
		}
	}
	if len(events) != 1 || !strings.Contains(events[0], "ApplyNow: apply-now: commit "+fleetCandidate+" set by alice at 2026-11-25T12:29:00Z (INC-42) applies past: held by window") {
		t.Fatalf("events %q, want one ApplyNow", events)
	}
}

// A failed or degraded running revision is not held by the window; the
// tap tells the state of the revision, not of its modules, nor a held one.
func TestFleetBrokenNotHeld(t *testing.T) {
	for _, tt := range []struct {
		reports []commitstatus.Report
		held    bool
	}{
		{[]commitstatus.Report{{Commit: fleetRunning, State: commitstatus.Applied}}, true},
		{[]commitstatus.Report{{Commit: fleetRunning, State: commitstatus.Failed}}, false},
		{[]commitstatus.Report{{Commit: fleetRunning, State: commitstatus.Applied}, {Commit: fleetRunning, State: commitstatus.Degraded}}, false},
		{[]commitstatus.Report{{Commit: fleetRunning, State: commitstatus.Failed}, {Commit: fleetRunning, State: commitstatus.Healthy}}, true},
		{[]commitstatus.Report{{Commit: fleetRunning, Module: "m", State: commitstatus.Failed}}, true},
		{[]commitstatus.Report{{Commit: fleetRunning, State: commitstatus.Failed}, {Commit: fleetRunning, State: commitstatus.Held}}, false},
	} {
		next := &reports{}
		tap := newRevisionTap(next)
		for _, r := range tt.reports {
			tap.Report(r)
		}
		if len(next.got) != len(tt.reports) {
			t.Fatalf("the tap passed on %d of %d reports", len(next.got), len(tt.reports))
		}
		var events []string
		f := testFleet(t, &reports{}, tap, &events)
		if held := len(f.hold(gitsync.Revision{Commit: fleetCandidate, Ref: "main", RemoteRef: "refs/heads/main"})) > 0; held != tt.held {
			t.Errorf("after %+v: held %v, want %v", tt.reports, held, tt.held)
		}
	}
}

func TestSourceKeysOfTheFleet(t *testing.T) {
	a := applyNowIn(map[string]string{sourceApplyNowKey: "abcdef0", sourceApplyNowAtKey: "2026-11-25T12:00:00Z", sourceApplyNowByKey: "bob"})
	if a.Commit != "abcdef0" || a.By != "bob" || a.At.IsZero() {
		t.Fatalf("applyNowIn: %+v", a)
	}
	if got := pinIn(map[string]string{sourceHeldAtRevKey: fleetRunning}, sourceHeldAtRevKey); got != fleetRunning {
		t.Fatalf("pinIn(heldAtRevision) = %q", got)
	}
	if got := pinIn(map[string]string{sourceHeldAtRevKey: "main"}, sourceHeldAtRevKey); got != "" {
		t.Fatalf("pinIn(heldAtRevision: main) = %q, want none", got)
	}
}

// A ConfigMap edit is held while the running policy's window is closed,
// not when the running revision is failed, nor without a fleet.
func TestFleetConfigHeld(t *testing.T) {
	var events []string
	tap := newRevisionTap(nil)
	f := testFleet(t, &reports{}, tap, &events)
	if reason, held := f.configHeld(); !held || !strings.HasPrefix(reason, `held by window "freeze" (deny) until `) {
		t.Fatalf("configHeld = %q, %v", reason, held)
	}
	tap.Report(commitstatus.Report{Commit: fleetRunning, State: commitstatus.Failed})
	if _, held := f.configHeld(); held {
		t.Fatal("an edit held while the running revision is failed")
	}
	if _, held := (*fleet)(nil).configHeld(); held {
		t.Fatal("held without a fleet")
	}
}

// The rollout reads statuses through the provider's API with the read
// token (default: the commit status token); a webhook has none to read.
func TestCommitStatusReadLister(t *testing.T) {
	const gitURL = "https://git.example/platform/addons.git"
	for _, tt := range []struct {
		name string
		o    commitStatusOptions
		want bool
		err  string
	}{
		{"off", commitStatusOptions{}, false, ""},
		{"github", commitStatusOptions{Provider: "github", TokenFile: "t"}, true, ""},
		{"gitlab, its own read token", commitStatusOptions{Provider: "gitlab", TokenFile: "t", ReadTokenFile: "r"}, true, ""},
		{"gitea without a URL", commitStatusOptions{Provider: "gitea", TokenFile: "t"}, false, "set ADDON_OPERATOR_COMMIT_STATUS_URL"},
		{"webhook", commitStatusOptions{Provider: "webhook", URL: "https://hooks.example/x"}, false, ""},
		{"webhook with a read token", commitStatusOptions{Provider: "webhook", URL: "https://hooks.example/x", ReadTokenFile: "r"}, false, "has no statuses to read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []*string{&tt.o.TokenFile, &tt.o.ReadTokenFile} {
				if *f != "" {
					*f = filepath.Join(dir, *f)
					if err := os.WriteFile(*f, []byte("tok\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			l, err := tt.o.lister(gitURL)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (l != nil) != tt.want {
				t.Fatalf("lister %v, want one: %v", l, tt.want)
			}
		})
	}
}

// The heldAtRevision pin of an empty-checkout start gives up (for the
// ref's newest, which the gate does not hold: nothing runs yet) only when
// the remote says the commit is not there, never because git cannot be
// reached for a while: an outage would let the held commit in.
func TestHeldAtPinSurvivesAnOutage(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator-source", Namespace: "ns"},
		Data: map[string]string{sourceHeldAtRevKey: fleetRunning}})
	s := &startup{sourceCM: kube.NewConfigMap(client, "ns", "addon-operator-source"), heldAtPin: true}
	outage := errors.New(`sync https://git.example.com/fleet.git: fetch 1111: list remote refs: dial tcp: connection refused`)
	for i := range 10 {
		if !s.stillPinned(t.Context(), outage) {
			t.Fatalf("the pin was given up after %d failures to reach git", i+1)
		}
	}
	gone := fmt.Errorf("sync: %w", fmt.Errorf("commit %s %w", fleetRunning, gitsync.ErrCommitNotFound))
	for i := range maxHeldAtTries - 1 {
		if !s.stillPinned(t.Context(), gone) {
			t.Fatalf("the pin was given up after %d not-found answers, want %d", i+1, maxHeldAtTries)
		}
	}
	if s.stillPinned(t.Context(), gone) {
		t.Fatalf("the pin was kept after %d not-found answers", maxHeldAtTries)
	}
	// lifted by hand: deleting the key frees the start at once
	s = &startup{sourceCM: kube.NewConfigMap(fake.NewClientset(), "ns", "addon-operator-source"), heldAtPin: true}
	if s.stillPinned(t.Context(), outage) {
		t.Fatal("the pin was kept without heldAtRevision in the source ConfigMap")
	}
}

// heldAtRevision is removed once nothing is held even when the gate is
// asked before the source ConfigMap's watch delivered its data (the first
// poll after a start): a pin left behind would start a later pod on an
// old commit.
func TestHeldAtRemovedBeforeTheWatchDelivered(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator-source", Namespace: "ns"},
		Data: map[string]string{sourceHeldAtRevKey: fleetRunning, "ref": "main"}})
	cm := kube.NewConfigMap(client, "ns", "addon-operator-source")
	s := &startup{sourceCM: cm, logger: slog.New(slog.DiscardHandler),
		fleet: &fleet{ctx: t.Context(), logger: slog.New(slog.DiscardHandler)}}
	s.writeHeldAt(fleetCandidate, false)
	data, err := cm.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if data[sourceHeldAtRevKey] != "" || data["ref"] != "main" {
		t.Fatalf("source ConfigMap after nothing held: %v, want heldAtRevision removed and the rest kept", data)
	}
	// held: recorded, whatever the watch saw
	s.writeHeldAt(fleetCandidate, true)
	if data, _ := cm.Get(t.Context()); data[sourceHeldAtRevKey] != fleetCandidate {
		t.Fatalf("heldAtRevision = %q, want %s", data[sourceHeldAtRevKey], fleetCandidate)
	}
	// no source ConfigMap and nothing held: none is created for it
	s.sourceCM = kube.NewConfigMap(fake.NewClientset(), "ns", "addon-operator-source")
	s.fleet = &fleet{ctx: t.Context(), logger: slog.New(slog.DiscardHandler)}
	s.writeHeldAt(fleetCandidate, false)
	if _, err := s.sourceCM.Get(t.Context()); err == nil {
		if data, _ := s.sourceCM.Get(t.Context()); len(data) != 0 {
			t.Fatalf("source ConfigMap written: %v", data)
		}
	}
}
