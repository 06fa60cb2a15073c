package lifecycle

import (
	"strings"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/loader"
)

// A tree CheckTree refuses gets a commit status naming the file and the
// module, never the error's text (a hook's --config output, a file's
// content, the ConfigMap's values).
func TestRefusedTreeReason(t *testing.T) {
	t.Parallel()
	const tail = "; the previous revision keeps running (see /status)"
	base := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"))
	tests := []struct {
		name  string
		files map[string]string
		data  map[string]string
		want  string
	}{
		{"a module's values.yaml", map[string]string{"modules/001-alpha/values.yaml": "alpha: [secret-content\n"}, nil,
			"module alpha: modules/001-alpha/values.yaml does not load" + tail},
		{"the common values.yaml", map[string]string{"modules/values.yaml": "alphaEnabled: [secret-content\n"}, nil,
			"modules/values.yaml does not load" + tail},
		{"a hook's --config", map[string]string{"modules/001-alpha/hooks/h.sh": "#!/bin/sh\necho secret-content; exit 1\n"}, nil,
			"module alpha: modules/001-alpha/hooks/h.sh does not load" + tail},
		{"a schema refuses the ConfigMap", map[string]string{"modules/001-alpha/openapi/config-values.yaml": "type: object\nproperties:\n  x: {type: integer}\n"},
			map[string]string{"alpha": "x: secret-content\n"},
			"module alpha: alpha values do not match modules/001-alpha/openapi/config-values.yaml" + tail},
		{"a maintenance key", nil, map[string]string{"alphaMaintenance": "secret-content"}, "the tree refuses the values ConfigMap" + tail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, merged(base, tt.files))
			var (
				mu  sync.Mutex
				got []RevisionState
			)
			op := New(Config{Logger: quiet(), OnRevisionState: func(s RevisionState) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, s)
			}}, newFakeConfig(tt.data), newFakeHelm(nil), loader.New(loader.WithLogger(quiet())))
			_, err := op.CheckTree(t.Context(), dir, "modules", "global-hooks")
			if err == nil {
				t.Fatal("the tree was not refused")
			}
			op.Refused("c0ffee", err)
			mu.Lock()
			defer mu.Unlock()
			want := RevisionState{Commit: "c0ffee", State: RevisionFailed, Reason: tt.want}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("states %+v, want %+v (the error: %v)", got, want, err)
			}
			if strings.Contains(got[0].Reason, "secret-content") {
				t.Fatalf("reason %q carries the error's text", got[0].Reason)
			}
		})
	}
}
