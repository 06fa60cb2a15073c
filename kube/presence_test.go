package kube

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakePresence answers AllPresent with present and records what it was
// asked.
type fakePresence struct {
	mu      sync.Mutex
	present bool
	asked   []int // revisions
}

func (f *fakePresence) AllPresent(module string, revision int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, revision)
	return f.present
}

// An unchanged release's check for missing resources trusts the Presence
// when it knows every object is there, and reads the objects otherwise.
func TestHelmUpgradeAsksPresence(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	p := &fakePresence{present: true}
	h.SetPresence(p)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{}}}
	if res, err := h.Upgrade(t.Context(), r); err != nil || !res.Upgraded {
		t.Fatalf("install: %+v, %v", res, err)
	}
	if len(p.asked) != 0 {
		t.Fatalf("an install asked for presence: %v", p.asked)
	}
	if err := client.CoreV1().ConfigMaps(ns).Delete(t.Context(), "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		present  bool
		upgraded bool
	}{
		// the watches' word is taken: no request per object, nothing put back
		{"the presence says all are there", true, false},
		// not known: each object is read, the missing one put back
		{"the presence does not know", false, true},
	} {
		p.mu.Lock()
		p.present, p.asked = tc.present, nil
		p.mu.Unlock()
		res, err := h.Upgrade(t.Context(), r)
		if err != nil || res.Upgraded != tc.upgraded {
			t.Fatalf("%s: %+v, %v; want upgraded %v", tc.name, res, err, tc.upgraded)
		}
		if len(p.asked) != 1 || p.asked[0] != 1 {
			t.Fatalf("%s: asked for revisions %v, want [1]", tc.name, p.asked)
		}
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "demo", metav1.GetOptions{}); err != nil {
		t.Fatalf("the missing ConfigMap was not put back: %v", err)
	}
}
