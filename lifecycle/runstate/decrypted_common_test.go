package runstate

import (
	"testing"

	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
)

// The common values.yaml has the module's section too (defaults), the
// module's encrypted values.yaml the secret: the secret is still hidden.
func TestTreesDecryptedUnderCommonDefaults(t *testing.T) {
	m := model(t, "alpha")
	m.Encrypted = map[string][]secretfile.Path{"alpha": {{"token"}}}
	m.Values.Common = values.Values{"alpha": map[string]any{"replicas": 1.0}}
	m.Values.Modules[0].Values = values.Values{"alpha": map[string]any{"token": "decrypted-module-5"}}
	red := values.NewRedactor()
	trees := Trees{Redactor: red}
	trees.Decrypted(m)
	if got := red.Text("helm: bad value decrypted-module-5"); got != "helm: bad value <redacted>" {
		t.Fatalf("Text = %q", got)
	}
}
