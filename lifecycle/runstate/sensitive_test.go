package runstate

import (
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
)

// Each tree a transition sets carries the secret paths (the Redactor's,
// from the values Secret, and the model's encrypted ones), and the
// Redactor is told their values in the tree's data before the tree runs.
func TestTreesSensitive(t *testing.T) {
	t.Parallel()
	m := model(t, "alpha")
	m.Config = &clusterconfig.Config{Encrypted: map[string][]secretfile.Path{"alpha": {{"token"}}}}
	red := values.NewRedactor()
	fromSecret, _ := values.SensitiveFromData(map[string]string{"global": "password: from-secret-1\n"})
	red.Add(fromSecret, map[string]string{"global": "password: from-secret-1\n"})
	trees := Trees{Redactor: red}
	data := map[string]string{"alpha": "token: decrypted-token-1\nx: 1\n", "global": "password: from-secret-1\n"}
	store, err := Admit(m, map[string]string{"alpha": "x: 1\n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	trees.Start(&Tree{Model: m, Store: store, ConfigData: data})
	s := trees.Load().Sensitive
	if len(s.Paths("alpha")) != 1 || len(s.Paths("global")) != 1 {
		t.Fatalf("tree's secret paths: alpha %v, global %v", s.Paths("alpha"), s.Paths("global"))
	}
	if got := red.Text("decrypted-token-1 from-secret-1"); got != "<redacted> <redacted>" {
		t.Fatalf("Text = %q", got)
	}
	// a transition's tree too: its new data's values
	next := map[string]string{"alpha": "token: decrypted-token-2\n"}
	if err := trees.Transition(func(cur *Tree) (*Tree, error) {
		n := *cur
		n.ConfigData = next
		return &n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := red.Text("decrypted-token-2"); got != "<redacted>" {
		t.Fatalf("after a transition: Text = %q", got)
	}
}

// A model's decrypted values are hidden before it is judged.
func TestTreesDecrypted(t *testing.T) {
	t.Parallel()
	m := model(t, "alpha")
	m.Config = &clusterconfig.Config{Data: map[string]string{"alpha": "token: decrypted-token-3\n"},
		Encrypted: map[string][]secretfile.Path{"alpha": {{"token"}}}}
	red := values.NewRedactor()
	trees := Trees{Redactor: red}
	trees.Decrypted(m)
	trees.Decrypted(model(t, "beta")) // no cluster config
	if got := red.Text("decrypted-token-3"); got != "<redacted>" {
		t.Fatalf("Text = %q", got)
	}
}

// A model's SOPS-encrypted values files (loader.WithSecrets) are secret
// too: their paths are the tree's and their decrypted values hidden.
func TestTreesDecryptedValuesFiles(t *testing.T) {
	t.Parallel()
	m := model(t, "alpha")
	m.Encrypted = map[string][]secretfile.Path{"alpha": {{"token"}}, "global": {{"apiKey"}}}
	m.Values.Common = values.Values{"global": map[string]any{"apiKey": "decrypted-common-4"}}
	m.Values.Modules[0].Values = values.Values{"alpha": map[string]any{"token": "decrypted-module-4"}}
	red := values.NewRedactor()
	trees := Trees{Redactor: red}
	trees.Decrypted(m)
	if got := red.Text("decrypted-common-4 decrypted-module-4"); got != "<redacted> <redacted>" {
		t.Fatalf("Decrypted: Text = %q", got)
	}
	red2 := values.NewRedactor()
	trees2 := Trees{Redactor: red2}
	store, err := Admit(m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	trees2.Start(&Tree{Model: m, Store: store})
	if s := trees2.Load().Sensitive; len(s.Paths("alpha")) != 1 || len(s.Paths("global")) != 1 {
		t.Fatalf("tree's secret paths: alpha %v, global %v", s.Paths("alpha"), s.Paths("global"))
	}
	if got := red2.Text("decrypted-module-4"); got != "<redacted>" {
		t.Fatalf("Start: Text = %q", got)
	}
}
