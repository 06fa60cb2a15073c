package health

import (
	"testing"
	"time"

	"github.com/addonops/addon-operator/kube"
)

// The tracker tells OnEdited of an update that changed what a release's
// object says (its spec, a ConfigMap's labels), and not of the first
// list, a status-only update, a deletion or a re-creation.
func TestTrackerOnEdited(t *testing.T) {
	t.Parallel()
	edited := make(chan string, 100)
	h := newHarness(t, Options{ProgressTimeout: time.Hour, OnEdited: func(m string) { edited <- m }})
	dep := deployment("ns", "web", 1, 2)
	cm := configMap("ns", "web-config")
	h.w.set(dep)
	h.w.set(cm)
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep), ref(cm)}})
	h.t.Deployed(t.Context(), "web", 1, true)
	h.settle(t, "web", Healthy)
	none := func(what string) {
		t.Helper()
		select {
		case m := <-edited:
			t.Fatalf("%s: told that %s was edited", what, m)
		case <-time.After(100 * time.Millisecond):
		}
	}
	one := func(what string) {
		t.Helper()
		select {
		case m := <-edited:
			if m != "web" {
				t.Fatalf("%s: told of %s", what, m)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not told", what)
		}
	}
	none("the first list")

	// a controller's write: status only
	h.w.set(deployment("ns", "web", 1, 1))
	h.settle(t, "web", Degraded)
	none("a status-only update")

	// a hand edit of the spec
	edit := deployment("ns", "web", 2, 1)
	edit["spec"].(map[string]any)["replicas"] = int64(5)
	h.w.set(edit)
	one("a spec edit")

	// a label on the ConfigMap
	labelled := configMap("ns", "web-config")
	labelled["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
	h.w.set(labelled)
	one("a label edit")

	// gone and back: auto-healing's, not an edit
	h.w.del(labelled)
	h.settle(t, "web", Progressing)
	h.w.set(cm)
	none("a deletion and a re-creation")
}
