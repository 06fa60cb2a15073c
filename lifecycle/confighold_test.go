package lifecycle

import (
	"maps"
	"sync/atomic"
	"testing"
)

// A ConfigMap edit made while the hold's predicate says held (a change
// window is closed: docs/operator.md, "Fleets") is kept, not run; a later
// edit replaces it; when the predicate lets go, the newest edit is applied
// and nothing is shown held any more. An edit back to the running data is
// no edit and lifts the hold.
func TestConfigHoldAppliesTheNewestEditWhenItOpens(t *testing.T) {
	var closed atomic.Bool
	hold := NewConfigHold(func() (string, bool) {
		if closed.Load() {
			return `held by window "freeze" (deny)`, true
		}
		return "", false
	})
	first := map[string]string{"alpha": "x: 1\n"}
	u := startUnitWith(t, merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha")), first,
		newFakeHelm(nil), func(c *Config) { c.ConfigHold = hold })
	running := func() map[string]string { return u.op.trees.Load().ClusterData }

	closed.Store(true)
	u.config.set(map[string]string{"alpha": "x: 2\n"})
	second := map[string]string{"alpha": "x: 3\n"}
	u.config.set(second)
	if got := running(); !maps.Equal(got, first) {
		t.Fatalf("an edit ran while held: %v", got)
	}
	if reason, since, ok := hold.Held(); !ok || reason == "" || since.IsZero() {
		t.Fatalf("Held() = %q, %v, %v; want the window's reason", reason, since, ok)
	}
	// the window opens: the newest edit runs, within the recheck
	closed.Store(false)
	u.until("the newest held edit to apply", func() bool { return maps.Equal(running(), second) })
	if _, _, ok := hold.Held(); ok {
		t.Fatal("still shown held once applied")
	}

	// held, then edited back to what runs: nothing is held
	closed.Store(true)
	u.config.set(map[string]string{"alpha": "x: 4\n"})
	if _, _, ok := hold.Held(); !ok {
		t.Fatal("an edit in a closed window was not held")
	}
	u.config.set(second)
	if _, _, ok := hold.Held(); ok {
		t.Fatal("an edit back to the running data is still shown held")
	}
	if got := running(); !maps.Equal(got, second) {
		t.Fatalf("running %v, want %v", got, second)
	}
}
