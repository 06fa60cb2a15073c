package values

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSchemaRefs: a $ref resolves within the schema (a fragment) or to a
// file beneath the openapi directory; one to the network, to an absolute
// path or out of the directory is an error naming the schema file and the
// ref, and no request is made, even when a file reached through a ref
// names the URL.
func TestSchemaRefs(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"type": "string"}`))
	}))
	defer srv.Close()
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(outside, []byte("type: string\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "openapi")
	files := map[string]string{
		"defs.yaml":        "type: string\nenum: [a, b]\n",
		"sub/nested.yaml":  "type: object\nproperties:\n  x: {$ref: '../defs.yaml'}\n",
		"sub/network.yaml": "type: object\nproperties:\n  x: {$ref: '" + srv.URL + "/x.json'}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, rel)) }
	schema := func(ref string) string {
		return "type: object\nproperties:\n  p: {$ref: '" + ref + "'}\ndefinitions:\n  s: {type: string, enum: [a, b]}\n"
	}
	tests := []struct {
		name    string
		ref     string
		refs    RefReader
		wantErr string
	}{
		{name: "fragment", ref: "#/definitions/s"},
		{name: "file beside", ref: "defs.yaml", refs: read},
		{name: "file with a ref of its own", ref: "sub/nested.yaml", refs: read},
		{name: "file with no reader", ref: "defs.yaml", wantErr: "files are not read here"},
		{name: "http", ref: srv.URL + "/x.json", refs: read, wantErr: `values.yaml: $ref "` + srv.URL + `/x.json": names a network location`},
		{name: "https", ref: "https://127.0.0.1:1/x.json", refs: read, wantErr: "names a network location"},
		{name: "scheme-relative", ref: "//127.0.0.1/x.json", refs: read, wantErr: "names a network location"},
		{name: "file scheme", ref: "file://" + outside, refs: read, wantErr: "names a network location or another scheme"},
		{name: "absolute path", ref: outside, refs: read, wantErr: "is an absolute path"},
		{name: "dot-dot", ref: "../../outside.yaml", refs: read, wantErr: `$ref "../../outside.yaml": leads out of the openapi directory`},
		{name: "network ref inside a referenced file", ref: "sub/network.yaml", refs: read, wantErr: "sub/network.yaml: $ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSchemasWithRefs(dir, tt.refs, nil, []byte(schema(tt.ref)))
			if n := requests.Load(); n != 0 {
				t.Fatalf("%d requests made", n)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), filepath.Join(dir, ValuesSchemaFile)) && tt.name != "network ref inside a referenced file" {
					t.Fatalf("err = %v, want %q naming the schema file", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := map[string]any{"p": "c"}
			if tt.ref == "sub/nested.yaml" {
				v = map[string]any{"p": map[string]any{"x": "c"}}
			}
			if err := s.Values.Validate("m", v); err == nil {
				t.Fatal("a value outside the referenced enum passed")
			}
		})
	}
}
