package health

import (
	"testing"

	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/kube"
)

// AllPresent is true only while the watches have every object of the
// module's release at that revision; whatever it does not know is false,
// so Helm reads the objects itself.
func TestAllPresent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	cm, other := configMap("ns", "web-config"), configMap("ns", "web-extra")
	h.w.set(cm)
	h.w.set(other)
	h.r.set("web", kube.ReleaseObjects{Revision: 3, Objects: []kube.ObjectRef{ref(cm), ref(other)}})
	if h.t.AllPresent("web", 3) {
		t.Fatal("present before the module was deployed")
	}
	h.t.Deployed(t.Context(), "web", 3, true)
	testwait.Until(t, "the watches synced", func() bool { return h.t.AllPresent("web", 3) })
	for _, tc := range []struct {
		name     string
		module   string
		revision int
		want     bool
	}{
		{"the deployed revision", "web", 3, true},
		{"another revision", "web", 4, false},
		{"an untracked module", "api", 3, false},
	} {
		if got := h.t.AllPresent(tc.module, tc.revision); got != tc.want {
			t.Errorf("%s: AllPresent(%s, %d) = %v, want %v", tc.name, tc.module, tc.revision, got, tc.want)
		}
	}
	h.w.del(other)
	if h.t.AllPresent("web", 3) {
		t.Fatal("present with an object deleted")
	}
	h.w.set(other)
	if !h.t.AllPresent("web", 3) {
		t.Fatal("not present with the object back")
	}
	// a kind the API does not serve: not known
	h.r.set("web", kube.ReleaseObjects{Revision: 5, Objects: []kube.ObjectRef{ref(cm)}, Unresolved: map[kube.ObjectRef]string{{APIVersion: "x/v1", Kind: "Y", Name: "y"}: "no kind"}})
	h.t.Deployed(t.Context(), "web", 5, true)
	if h.t.AllPresent("web", 5) {
		t.Fatal("present with an unresolved object")
	}
	h.t.Removed("web")
	if h.t.AllPresent("web", 5) {
		t.Fatal("present after the module was removed")
	}
}
