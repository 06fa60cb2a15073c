package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// secretData is a values Secret's data: nested maps, a list, a number and
// a short value.
var secretData = map[string]string{
	"global": "registry:\n  password: s3cr3t-registry\n",
	"db":     "auth:\n  password: \"hunter2-db\"\n  users:\n  - name: admin-user\n    token: tok-abcdef\n  pin: 12345678\n  short: ab\n",
	"flag":   "true\n",
}

func newTestRedactor(t *testing.T) *Redactor {
	t.Helper()
	s, err := SensitiveFromData(secretData)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRedactor()
	r.Add(s, secretData)
	return r
}

func TestSensitiveFromData(t *testing.T) {
	s, err := SensitiveFromData(secretData)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, k := range s.Keys() {
		for _, p := range s.Paths(k) {
			got[k] = append(got[k], p.String())
		}
	}
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"global", []string{"registry.password"}},
		{"db", []string{"auth.password", "auth.pin", "auth.short", "auth.users[0].name", "auth.users[0].token"}},
		{"flag", []string{""}},
	} {
		have := strings.Join(sortedCopy(got[c.key]), ",")
		if want := strings.Join(c.want, ","); have != want {
			t.Errorf("%s: paths %s, want %s", c.key, have, want)
		}
	}
	_, err = SensitiveFromData(map[string]string{"bad": "a: [1\n  password: hunter2-bad"})
	if err == nil || !strings.Contains(err.Error(), "key bad") || strings.Contains(err.Error(), "hunter2-bad") {
		t.Errorf("bad YAML: %v, want an error naming the key without the value", err)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestSensitiveFromEncryptedAndUnion(t *testing.T) {
	type path []any // as secretfile.Path
	enc := SensitiveFromEncrypted(map[string][]path{"db": {{"auth", "password"}, {"list", 2}}})
	if got := len(enc.Paths("db")); got != 2 {
		t.Fatalf("encrypted paths: %d", got)
	}
	data, _ := SensitiveFromData(map[string]string{"db": "auth: {password: x}\nother: y\n"})
	u := enc.Union(data)
	var names []string
	for _, p := range u.Paths("db") {
		names = append(names, p.String())
	}
	if strings.Join(names, ",") != "auth.password,list[2],other" {
		t.Errorf("union: %v", names)
	}
	if !(Sensitive{}).Union(Sensitive{}).Empty() {
		t.Error("the union of empty sets is not empty")
	}
}

func TestRedactorText(t *testing.T) {
	r := newTestRedactor(t)
	for _, c := range []struct{ name, in, want string }{
		{"plain", "login with hunter2-db failed", "login with <redacted> failed"},
		{"nested list", "token tok-abcdef for admin-user", "token <redacted> for <redacted>"},
		{"number", "pin 12345678 wrong", "pin <redacted> wrong"},
		{"quoted", `value "hunter2-db" refused`, `value "<redacted>" refused`},
		{"base64", "data: aHVudGVyMi1kYg==", "data: <redacted>"},
		{"short value stays in free text", "ab cd", "ab cd"},
		{"booleans stay", "enabled: true", "enabled: true"},
		{"inside an error", fmt.Errorf("helm: Secret x is invalid: data[p]: Invalid value: %q", "s3cr3t-registry").Error(),
			`helm: Secret x is invalid: data[p]: Invalid value: "<redacted>"`},
		{"schema message at a secret path, short value", "db values do not match x:\n  - db.auth.short in body must be of type email: \"ab\"",
			"db values do not match x:\n  - db.auth.short in body must be of type email: \"<redacted>\""},
		{"schema message in a list", "  - db.auth.users.0.name must be of type email: \"admin-user\"", "  - db.auth.users.0.name must be of type email: \"<redacted>\""},
		{"schema message elsewhere kept", "  - db.other in body must be of type email: \"ab\"", "  - db.other in body must be of type email: \"ab\""},
		{"nothing secret", "all fine", "all fine"},
	} {
		if got := r.Text(c.in); got != c.want {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	var nilR *Redactor
	if nilR.Text("hunter2-db") != "hunter2-db" || !nilR.Empty() {
		t.Error("a nil Redactor changes text")
	}
}

// A real schema's message quotes the value it refuses: it is hidden at a
// secret path whatever its length.
func TestRedactorSchemaError(t *testing.T) {
	s, err := LoadSchemas("db", []byte("type: object\nproperties:\n  auth:\n    type: object\n    properties:\n      short: {type: string, format: email}\n      password: {type: string, format: email}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	verr := s.Config.Validate("db", map[string]any{"auth": map[string]any{"short": "ab", "password": "hunter2-db"}})
	if verr == nil {
		t.Fatal("no violation")
	}
	r := newTestRedactor(t)
	got := r.Text(fmt.Errorf("module db: %w", verr).Error())
	if strings.Contains(got, `"ab"`) || strings.Contains(got, "hunter2-db") || !strings.Contains(got, "db.auth.short") {
		t.Errorf("redacted schema error:\n%s", got)
	}
}

func TestRedactorValuesAndData(t *testing.T) {
	r := newTestRedactor(t)
	v := Values{
		"global": map[string]any{"registry": map[string]any{"password": "s3cr3t-registry", "host": "r.example.com"}},
		"db": map[string]any{"auth": map[string]any{"password": "hunter2-db", "short": "ab", "pin": 12345678.0,
			"users": []any{map[string]any{"name": "admin-user", "token": "tok-abcdef"}}},
			"dsn": "postgres://u:hunter2-db@host"},
	}
	got := r.Values(v)
	assertJSON(t, got, `{"global":{"registry":{"password":"<redacted>","host":"r.example.com"}},
		"db":{"auth":{"password":"<redacted>","short":"<redacted>","pin":"<redacted>",
		"users":[{"name":"<redacted>","token":"<redacted>"}]},"dsn":"postgres://u:<redacted>@host"}}`)
	if v["db"].(map[string]any)["auth"].(map[string]any)["password"] != "hunter2-db" {
		t.Error("Values changed its argument")
	}
	data := r.Data(map[string]string{"db": "auth:\n  short: ab\n  other: keep\n", "flag": "true", "plain": "x: hunter2-db\n", "bad": "]["})
	for k, want := range map[string]string{"db": "auth:\n  other: keep\n  short: <redacted>\n", "flag": "<redacted>\n", "plain": "x: <redacted>\n", "bad": "]["} {
		if data[k] != want {
			t.Errorf("Data[%s] = %q, want %q", k, data[k], want)
		}
	}
}

func TestRedactorJSON(t *testing.T) {
	r := newTestRedactor(t)
	for _, c := range []struct {
		name string
		in   any
	}{
		{"plain", map[string]any{"lastError": "token tok-abcdef refused", "z": 1, "a": []any{"hunter2-db"}}},
		{"schema message", map[string]any{"treeError": "  - db.auth.short in body must be of type email: \"ab\""}},
	} {
		b, _ := json.Marshal(c.in)
		out := r.JSON(b)
		if !json.Valid(out) {
			t.Errorf("%s: not JSON: %s", c.name, out)
		}
		for _, s := range []string{"tok-abcdef", "hunter2-db", `\"ab\"`} {
			if bytes.Contains(out, []byte(s)) {
				t.Errorf("%s: %s shows in %s", c.name, s, out)
			}
		}
	}
	// a secret beginning inside an escape must not break the document
	r2 := NewRedactor()
	r2.Add(mustSensitive(t, map[string]string{"k": `v: "n-secret-value"`}), map[string]string{"k": `v: "n-secret-value"`})
	b, _ := json.Marshal(map[string]string{"x": "a\\n-secret-value"})
	if out := r2.JSON(b); !json.Valid(out) {
		t.Errorf("broken JSON: %s", out)
	}
}

func mustSensitive(t *testing.T, data map[string]string) Sensitive {
	t.Helper()
	s, err := SensitiveFromData(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Secrets are kept once seen: a message about data a later change
// replaced still hides them; adding nothing new keeps the snapshot.
func TestRedactorGrows(t *testing.T) {
	r := NewRedactor()
	if !r.Empty() {
		t.Fatal("new Redactor not empty")
	}
	r.Add(mustSensitive(t, map[string]string{"a": "p: first-secret"}), map[string]string{"a": "p: first-secret"})
	before := r.snap.Load()
	r.Add(mustSensitive(t, map[string]string{"a": "p: first-secret"}), map[string]string{"a": "p: first-secret"})
	if r.snap.Load() != before {
		t.Error("adding the same secret made a new snapshot")
	}
	r.Add(mustSensitive(t, map[string]string{"a": "p: second-secret"}), map[string]string{"a": "p: second-secret"})
	if got := r.Text("first-secret second-secret"); got != "<redacted> <redacted>" {
		t.Errorf("Text = %q", got)
	}
}

func TestLogHandler(t *testing.T) {
	r := newTestRedactor(t)
	var buf bytes.Buffer
	log := slog.New(r.LogHandler(slog.NewJSONHandler(&buf, nil))).With("fixed", "s3cr3t-registry")
	log.Error("login hunter2-db", "err", errors.New("bad token tok-abcdef"), "list", []string{"admin-user"},
		slog.Group("g", "inner", "hunter2-db"), "n", 3)
	out := buf.String()
	for _, s := range []string{"hunter2-db", "tok-abcdef", "admin-user", "s3cr3t-registry"} {
		if strings.Contains(out, s) {
			t.Errorf("%s in log line %s", s, out)
		}
	}
	if !strings.Contains(out, `"n":3`) {
		t.Errorf("a number attribute changed: %s", out)
	}
}

// The cost of hiding 50 secrets in a log line's text, which every log
// record pays while a values Secret is set.
func BenchmarkRedactorText(b *testing.B) {
	r := NewRedactor()
	data := map[string]string{}
	for i := range 50 {
		data[fmt.Sprintf("m%d", i)] = fmt.Sprintf("password: secret-value-%04d\n", i)
	}
	s, err := SensitiveFromData(data)
	if err != nil {
		b.Fatal(err)
	}
	r.Add(s, data)
	line := strings.Repeat("helm release applied module=alpha reason=installed ", 4) + "secret-value-0042"
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Text(line)
	}
}
