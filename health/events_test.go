package health

import (
	"context"
	"log/slog"
	"slices"
	"testing"
)

type fakeRecorder struct{ got []string }

func (f *fakeRecorder) ModuleEvent(_ context.Context, module, eventType, reason, _ string) error {
	f.got = append(f.got, module+" "+eventType+" "+reason)
	return nil
}

// Events records Degraded and the recovery from it, once each.
func TestEvents(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		steps []Status
		want  []string
	}{
		{"a deploy that turns healthy", []Status{Unknown, Progressing, Healthy}, nil},
		{"degraded and back", []Status{Healthy, Degraded, Progressing, Healthy}, []string{"m Warning ModuleDegraded", "m Normal ModuleHealthy"}},
		{"degraded at start", []Status{Degraded}, []string{"m Warning ModuleDegraded"}},
		{"flaps through unknown", []Status{Degraded, Unknown, Degraded, Healthy, Healthy}, []string{"m Warning ModuleDegraded", "m Normal ModuleHealthy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			on := Events(rec, slog.New(slog.DiscardHandler))
			for _, s := range tc.steps {
				on(Transition{Module: "m", Health: ModuleHealth{Status: s}})
			}
			if !slices.Equal(rec.got, tc.want) {
				t.Fatalf("events %v, want %v", rec.got, tc.want)
			}
		})
	}
}
