package values

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func mustParse(t testing.TB, src string) Values {
	t.Helper()
	v, err := ParseYAML("test", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad expectation %s: %v", s, err)
	}
	return v
}

func assertJSON(t testing.TB, got any, want string) {
	t.Helper()
	g, _ := json.Marshal(got)
	var gv any
	_ = json.Unmarshal(g, &gv)
	if !reflect.DeepEqual(gv, mustJSON(t, want)) {
		t.Fatalf("got  %s\nwant %s", g, want)
	}
}

func loadSchemas(t testing.TB, dir string) *Schemas {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	s, err := LoadSchemas(dir, read(ConfigSchemaFile), read(ValuesSchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
