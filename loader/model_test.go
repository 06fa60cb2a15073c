package loader

import "testing"

func TestHookKey(t *testing.T) {
	hook := Hook{Module: "one", Name: "001-one/hooks/a.sh", Path: "/checkout/rev-a/modules/001-one/hooks/a.sh",
		WorkingDir: "/checkout/rev-a/modules/001-one/hooks", Hash: "h1"}
	tests := []struct {
		name   string
		change func(h *Hook)
		same   bool
	}{
		{name: "the same hook in another checkout", same: true, change: func(h *Hook) {
			h.Path, h.WorkingDir = "/checkout/rev-b/modules/001-one/hooks/a.sh", "/checkout/rev-b/modules/001-one/hooks"
		}},
		{name: "another module", change: func(h *Hook) { h.Module = "two" }},
		{name: "a global hook of the same name", change: func(h *Hook) { h.Module = "" }},
		{name: "another name", change: func(h *Hook) { h.Name = "001-one/hooks/b.sh" }},
		{name: "changed content", change: func(h *Hook) { h.Hash = "h2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := hook
			tt.change(&other)
			if same := other.Key() == hook.Key(); same != tt.same {
				t.Fatalf("Key() %q vs %q: same = %v, want %v", other.Key(), hook.Key(), same, tt.same)
			}
		})
	}
}
