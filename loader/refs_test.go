package loader

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSchemaRefsStayInTree: a module schema's $ref resolves to a file
// beneath its openapi directory; one to the network or out of the tree
// fails the load with an error naming the schema file and the ref, with
// hook configs run (the operator) or not (previews), and makes no request.
func TestSchemaRefsStayInTree(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"type": "string"}`))
	}))
	defer srv.Close()
	tests := []struct {
		name    string
		ref     string
		wantErr string
	}{
		{name: "file beneath openapi", ref: "defs.yaml#/definitions/s"},
		{name: "network", ref: srv.URL + "/x.json", wantErr: `$ref "` + srv.URL + `/x.json": names a network location`},
		{name: "absolute path out of the tree", ref: "SECRET", wantErr: "is an absolute path"},
		{name: "dot-dot out of the tree", ref: "../../../../secret.yaml", wantErr: "leads out of the openapi directory"},
	}
	for _, configs := range []bool{true, false} {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				base, tree := goodTree(t)
				ref := strings.ReplaceAll(tt.ref, "SECRET", filepath.Join(base, "secret.yaml"))
				openapi := filepath.Join(tree, "modules/001-module/openapi")
				writeFile(t, filepath.Join(openapi, "values.yaml"), "type: object\nproperties:\n  p: {$ref: '"+ref+"'}\n", 0o644)
				writeFile(t, filepath.Join(openapi, "defs.yaml"), "definitions:\n  s: {type: string, enum: [a]}\n", 0o644)
				l := New(WithLogger(quietLogger()), WithHookConfigs(configs))
				m, err := load(t, l, tree)
				if n := requests.Load(); n != 0 {
					t.Fatalf("%d requests made", n)
				}
				if tt.wantErr == "" {
					if err != nil {
						t.Fatal(err)
					}
					if err := m.Module("module").Schemas.Values.Validate("module", map[string]any{"p": "b"}); err == nil {
						t.Fatal("the referenced enum was not enforced")
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), filepath.Join(openapi, "values.yaml")) {
					t.Fatalf("err = %v, want %q naming %s", err, tt.wantErr, filepath.Join(openapi, "values.yaml"))
				}
			})
		}
	}
}
