package modulestatus

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeRecorder records where each Event went.
type fakeRecorder struct{ got []string }

func (f *fakeRecorder) Event(_ context.Context, eventType, reason, _ string) error {
	f.got = append(f.got, "ConfigMap "+eventType+" "+reason)
	return nil
}

func (f *fakeRecorder) EventOn(_ context.Context, ref corev1.ObjectReference, eventType, reason, _ string) error {
	f.got = append(f.got, ref.Kind+"/"+ref.Name+"("+string(ref.UID)+") "+eventType+" "+reason)
	return nil
}

// refsClient is a Client that knows the objects it wrote.
type refsClient struct {
	*fakeClient
	uids map[string]string
}

func (r refsClient) Ref(name string) (corev1.ObjectReference, bool) {
	uid, ok := r.uids[name]
	return corev1.ObjectReference{Kind: "Module", Name: name, UID: types.UID(uid)}, ok
}

// A module's Event goes on its Module object when the client knows it,
// on the values ConfigMap otherwise or with the objects off.
func TestEventsRoute(t *testing.T) {
	t.Parallel()
	known := refsClient{fakeClient: newFakeClient(), uids: map[string]string{"alpha": "u1"}}
	for _, tc := range []struct {
		name    string
		objects Client
		module  string
		want    string
	}{
		{"object known", known, "alpha", "Module/alpha(u1) Warning Drifted"},
		{"object not written yet", known, "beta", "ConfigMap Warning Drifted"},
		{"objects off", nil, "alpha", "ConfigMap Warning Drifted"},
		{"a client without refs", newFakeClient(), "alpha", "ConfigMap Warning Drifted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			if err := NewEvents(tc.objects, rec).ModuleWarning(t.Context(), tc.module, "Drifted", "m"); err != nil {
				t.Fatal(err)
			}
			if len(rec.got) != 1 || rec.got[0] != tc.want {
				t.Fatalf("recorded %v, want [%s]", rec.got, tc.want)
			}
		})
	}
}
