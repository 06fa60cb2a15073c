package commitstatus

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func ringOf(n int) *int { return &n }

// What the Notifier writes, ParseOwn reads back: with and without a ring,
// for the revision and for a module, a long reason cut.
func TestParseOwnRoundTrip(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name    string
		cluster string
		ring    *int
		r       Report
		want    Own
	}{
		{"revision, ring 1", "prod-eu", ringOf(1), Report{State: Healthy}, Own{Cluster: "prod-eu", State: Healthy, Ring: 1, HasRing: true}},
		{"revision, ring 0", "canary", ringOf(0), Report{State: Applied}, Own{Cluster: "canary", State: Applied, HasRing: true}},
		{"no ring (older versions)", "prod", nil, Report{State: Degraded, Reason: "module a: Deployment x not ready"}, Own{Cluster: "prod", State: Degraded}},
		{"module", "prod", ringOf(2), Report{Module: "cert-manager", State: Failed, Reason: "hook x exited 1"}, Own{Cluster: "prod", Module: "cert-manager", State: Failed, Ring: 2, HasRing: true}},
		{"held (suspended)", "prod", ringOf(1), Report{State: Held, Reason: "suspended: release freeze"}, Own{Cluster: "prod", State: Held, Ring: 1, HasRing: true}},
		{"long reason keeps the tag", "prod", ringOf(12), Report{State: Failed, Reason: long}, Own{Cluster: "prod", State: Failed, Ring: 12, HasRing: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desc := withRing(describe(tt.r, tt.cluster), tt.ring)
			if len([]rune(desc)) > maxDescription {
				t.Fatalf("description of %d characters", len([]rune(desc)))
			}
			got, ok := ParseOwn(statusContext(tt.cluster, tt.r.Module), desc)
			if !ok || got != tt.want {
				t.Fatalf("ParseOwn(%q) = %+v, %v; want %+v", desc, got, ok, tt.want)
			}
		})
	}
}

func TestParseOwnIgnoresOthers(t *testing.T) {
	for _, c := range []struct{ context, desc string }{
		{"ci/build", "applied on prod"},
		{"addon-operator", "applied"}, // no cluster name: no fleet
		{"addon-operator/", "applied on x"},
		{"addon-operator/prod/", "applied on prod"},
		{"addon-operator/prod/a/b", "module a/b applied on prod"},
		{"addon-operator/prod", "The build succeeded"},
		{"addon-operator/prod", "[ring x] applied on prod"},
		{"addon-operator/prod", "[ring -1] applied on prod"},
		{"addon-operator/prod/alpha", "module beta applied on prod"},
		{"addon-operatorx/prod", "applied on prod"},
	} {
		if got, ok := ParseOwn(c.context, c.desc); ok {
			t.Errorf("ParseOwn(%q, %q) = %+v, want not ours", c.context, c.desc, got)
		}
	}
}

// With a ring set, the Notifier's descriptions carry it and its contexts
// do not change; the webhook body names it.
func TestNotifierPostsRing(t *testing.T) {
	h := newHarness(t, Options{Ring: ringOf(1)})
	h.run()
	h.n.Report(Report{Commit: commit(1), State: Healthy})
	h.want("0001 addon-operator/prod success")
	if got := h.forge.Statuses()[0].Description; got != "[ring 1] healthy on prod" {
		t.Fatalf("description %q", got)
	}
	wh, err := NewWebhook(WebhookOptions{URL: h.forge.WebhookURL(), TokenFile: writeFile(t, "t", "tok"), AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	for _, ring := range []*int{ringOf(0), nil} {
		if err := wh.Post(context.Background(), Status{Commit: sha, Context: "addon-operator/prod", Ring: ring, State: Applied}); err != nil {
			t.Fatal(err)
		}
	}
	got := h.forge.Statuses()
	var first, second map[string]any
	if json.Unmarshal(got[1].Body, &first) != nil || json.Unmarshal(got[2].Body, &second) != nil {
		t.Fatalf("webhook bodies %s %s", got[1].Body, got[2].Body)
	}
	if first["ring"] != 0.0 {
		t.Fatalf("webhook body %s: want ring 0", got[1].Body)
	}
	if _, ok := second["ring"]; ok {
		t.Fatalf("webhook body without a ring names one: %s", got[2].Body)
	}
}
