package preview

import (
	"strings"
	"testing"
)

const secretDoc = `# Source: m/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: ns
type: Opaque
data:
  password: c2VjcmV0
stringData:
  token: "t0ken"
`

const configMapDoc = `# Source: m/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-secret
data:
  password: visible
`

// RedactSecrets hides every value of a Secret's data and stringData, keys
// kept, in Secrets alone (a List's too), and leaves other documents as
// they are.
func TestRedactSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, manifest string
		want, gone     []string
	}{
		{name: "secret", manifest: "---\n" + secretDoc + "---\n" + configMapDoc,
			want: []string{"password: <redacted>", "token: <redacted>", "# Source: m/templates/secret.yaml", "name: creds", "---\n" + configMapDoc},
			gone: []string{"c2VjcmV0", "t0ken"}},
		{name: "a list of secrets", manifest: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: a}\n  data: {k: c2VjcmV0}\n",
			want: []string{"k: <redacted>"}, gone: []string{"c2VjcmV0"}},
		{name: "data that is not a mapping", manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\nstringData: s3cret\n",
			want: []string{"stringData: <redacted>"}, gone: []string{"s3cret"}},
		{name: "not the core group", manifest: "apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: a}\ndata: {k: shown}\n",
			want: []string{"k: shown"}},
		{name: "no secret", manifest: configMapDoc, want: []string{configMapDoc}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := RedactSecrets(tc.manifest)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("shows %q:\n%s", g, got)
				}
			}
		})
	}
}

// A diff of two redacted sides names the Secret keys whose values
// changed (RedactedChanged on the to side) and shows no value.
func TestRedactPair(t *testing.T) {
	t.Parallel()
	after := strings.Replace(secretDoc, "c2VjcmV0", "bmV3", 1)
	before, got := redactPair(secretDoc, after)
	if !strings.Contains(got, "password: "+RedactedChanged) || !strings.Contains(got, "token: "+Redacted+"\n") {
		t.Fatalf("to side:\n%s", got)
	}
	if strings.Contains(before, RedactedChanged) || strings.Contains(before+got, "c2VjcmV0") || strings.Contains(before+got, "bmV3") {
		t.Fatalf("sides:\n%s\n%s", before, got)
	}
	// a Secret that is new on the to side has nothing to have changed from
	if _, got := redactPair(configMapDoc, secretDoc); strings.Contains(got, RedactedChanged) {
		t.Fatalf("a new Secret:\n%s", got)
	}
}

// Compare tells a change of a Secret's data alone, and prints it redacted
// unless asked to show it.
func TestCompareSecretData(t *testing.T) {
	t.Parallel()
	before := &Preview{Enabled: []string{"m"}, Manifests: map[string]string{"m": secretDoc}}
	after := &Preview{Enabled: []string{"m"}, Manifests: map[string]string{"m": strings.Replace(secretDoc, "t0ken", "rotated", 1)}}
	c, err := Compare(before, after, "a", "b", false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Change["m"] != Changed || !strings.Contains(c.Diffs["m"], "+  token: "+RedactedChanged) || strings.Contains(c.Diffs["m"], "rotated") || strings.Contains(c.Diffs["m"], "t0ken") {
		t.Fatalf("change %s, diff:\n%s", c.Change["m"], c.Diffs["m"])
	}
	if c, err = Compare(before, after, "a", "b", true); err != nil || !strings.Contains(c.Diffs["m"], `+  token: "rotated"`) {
		t.Fatalf("shown: %v\n%s", err, c.Diffs["m"])
	}
}
