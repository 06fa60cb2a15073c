package drift

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// TestObjectDiffRedacts: the places a sensitive value hides in a diff,
// without an API server.
func TestObjectDiffRedacts(t *testing.T) {
	tests := []struct {
		name          string
		sensitive     []schema.GroupKind
		live, applied string
		hidden, shown []string
	}{
		{name: "secret data and last-applied",
			live:    `{apiVersion: v1, kind: Secret, metadata: {name: s, annotations: {note: hand, "kubectl.kubernetes.io/last-applied-configuration": "{\"stringData\":{\"pw\":\"HAND\"}}"}}, data: {pw: SEFORA==}}`,
			applied: `{apiVersion: v1, kind: Secret, metadata: {name: s, annotations: {note: chart, "kubectl.kubernetes.io/last-applied-configuration": "{\"stringData\":{\"pw\":\"HAND\"}}"}}, data: {pw: Q0hBUlQ=}, type: Opaque}`,
			hidden:  []string{"HAND", "SEFORA", "Q0hBUlQ"},
			shown:   []string{"-    note: hand", "+    note: chart", "(redacted, differs)", "type: Opaque", "last-applied-configuration: (redacted)"}},
		{name: "a YAML annotation of a secret",
			live:    `{apiVersion: v1, kind: Secret, metadata: {name: s, annotations: {backup: "stringData:\n  pw: HAND\n"}}, data: {pw: eA==}}`,
			applied: `{apiVersion: v1, kind: Secret, metadata: {name: s, annotations: {backup: "stringData:\n  pw: HAND\n"}}, data: {pw: eQ==}}`,
			hidden:  []string{"HAND"}, shown: []string{"backup: (redacted)"}},
		{name: "a secret's manifest in a configmap, several documents",
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {all.yaml: "kind: Service\napiVersion: v1\n---\nkind: Secret\napiVersion: v1\nstringData: {pw: HAND}\n", other: xa}}`,
			applied: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {all.yaml: "kind: Service\napiVersion: v1\n---\nkind: Secret\napiVersion: v1\nstringData: {pw: CHART}\n", other: xb}}`,
			hidden:  []string{"HAND", "CHART"}, shown: []string{"all.yaml: (redacted, differs)", "-  other: xa", "+  other: xb"}},
		{name: "a secret in a list in an annotation",
			live:    `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {a: "[{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"data\":{\"pw\":\"HAND\"}}]"}}, spec: {x: [1, "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"data\":{\"pw\":\"HAND\"}}"]}}`,
			applied: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {a: "[{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"data\":{\"pw\":\"HAND\"}}]"}}, spec: {x: [2, "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"data\":{\"pw\":\"HAND\"}}"]}}`,
			hidden:  []string{"HAND"}, shown: []string{"-  - 1", "+  - 2"}},
		{name: "a kind of another group is not a secret",
			live:    `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {m: "{\"kind\":\"Secret\",\"apiVersion\":\"example.com/v1\",\"data\":{\"pw\":\"VISIBLE\"}}", n: a}}`,
			applied: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {m: "{\"kind\":\"Secret\",\"apiVersion\":\"example.com/v1\",\"data\":{\"pw\":\"VISIBLE\"}}", n: b}}`,
			shown:   []string{"VISIBLE"}},
		{name: "a named sensitive kind",
			sensitive: []schema.GroupKind{{Group: "example.com", Kind: "Vault"}},
			live:      `{apiVersion: example.com/v1, kind: Vault, metadata: {name: v}, spec: {keys: {a: HAND, b: SAME}, list: [HAND]}}`,
			applied:   `{apiVersion: example.com/v1, kind: Vault, metadata: {name: v}, spec: {keys: {a: CHART, b: SAME, c: NEW}, list: [CHART]}}`,
			hidden:    []string{"HAND", "CHART", "SAME", "NEW"},
			shown:     []string{"a: (redacted, differs)", "b: (redacted)", "+    c: (redacted)", "name: v"}},
		{name: "the named kind embedded elsewhere",
			sensitive: []schema.GroupKind{{Group: "example.com", Kind: "Vault"}},
			live:      `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {v: "apiVersion: example.com/v2\nkind: Vault\nspec: {a: HAND}\n"}}`,
			applied:   `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {v: "apiVersion: example.com/v2\nkind: Vault\nspec: {a: CHART}\n"}}`,
			hidden:    []string{"HAND", "CHART"}, shown: []string{"v: (redacted, differs)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var live, applied map[string]any
			if err := yaml.Unmarshal([]byte(tt.live), &live); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tt.applied), &applied); err != nil {
				t.Fatal(err)
			}
			// a diff with all lines as context
			red := newRedactor(tt.sensitive)
			l, a := runtime.DeepCopyJSON(shown(live)), runtime.DeepCopyJSON(shown(applied))
			red.redact(l, a)
			ly, _ := yaml.Marshal(l)
			ay, _ := yaml.Marshal(a)
			text, err := objectDiff(red, Object{Kind: "K", Name: "n"}, live, applied)
			if err != nil {
				t.Fatal(err)
			}
			all := string(ly) + string(ay) + text
			for _, s := range tt.hidden {
				if strings.Contains(all, s) {
					t.Errorf("shows %q:\n%s\n%s", s, ly, ay)
				}
			}
			for _, s := range tt.shown {
				if !strings.Contains(all, s) {
					t.Errorf("lacks %q:\n%s\n%s\n%s", s, ly, ay, text)
				}
			}
			if strings.Contains(tt.live, "HAND") && !strings.Contains(yamlOf(t, live), "HAND") {
				t.Fatal("redact changed the object it was given")
			}
		})
	}
}

func yamlOf(t *testing.T, v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds([]string{"ConfigMap", " example.com/Vault ", ""})
	if err != nil || len(got) != 2 || got[0] != (schema.GroupKind{Kind: "ConfigMap"}) || got[1] != (schema.GroupKind{Group: "example.com", Kind: "Vault"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"a/b/C", "example.com/", "a b/C"} {
		if _, err := ParseKinds([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
