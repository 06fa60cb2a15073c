package preview

import (
	"os"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/secretfile"
)

// A schema refusal of a value decrypted with a key does not print the
// value: a preview's errors, failures and manifests hide what the tree's
// SOPS files hold, unless ShowSecrets.
func TestRenderErrorHidesDecrypted(t *testing.T) {
	enc, err := os.ReadFile("../loader/testdata/secrets/module-values.enc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := testtree.New(t, merged(chart("010-echo-server", "echo-server", "echoServer"), map[string]string{
		"modules/values.yaml":                                "echoServerEnabled: true\n",
		"modules/010-echo-server/values.yaml":                string(enc),
		"modules/010-echo-server/openapi/config-values.yaml": "type: object\nproperties:\n  token: {type: string, format: email}\n  replicas: {type: integer}\n  nested: {type: object, additionalProperties: true}\n",
	}))
	k, err := secretfile.NewKeyring("../secretfile/testdata/keys/test-only-age-key-a.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, err = renderTree(t, loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false), loader.WithSecrets(k, false)), root, nil, false)
	if err == nil || !strings.Contains(err.Error(), "<redacted>") || strings.Contains(err.Error(), "s3cret-token") {
		t.Errorf("preview error shows the decrypted value: %v", err)
	}
}
