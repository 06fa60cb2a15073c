// Package chart renders the operator's own Helm chart (addon-operator/)
// through the Helm library the operator links, and writes the plain
// manifest deploy/addon-operator.yaml from it (`make manifest`, or
// `go generate ./deploy/chart`): the chart is the source, the manifest its
// render with PlainValues. See docs/operator.md, "Installing with Helm".
package chart

//go:generate go run ./gen

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Name is the chart's name, the plain manifest's release name and
// namespace.
const Name = "addon-operator"

// Dir is the chart's directory, found from this file's so that tests and
// the generator run from any working directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), Name)
}

// ManifestPath is the plain manifest's path.
func ManifestPath() string { return filepath.Join(filepath.Dir(Dir()), "..", Name+".yaml") }

// RulesPath is the monitoring kit's alert rules, of which the chart keeps
// a copy (files/rules.yaml: Helm reads no file outside the chart).
func RulesPath() string { return filepath.Join(filepath.Dir(Dir()), "..", "monitoring", "rules.yaml") }

// ChartRulesPath is that copy.
func ChartRulesPath() string { return filepath.Join(Dir(), "files", "rules.yaml") }

// Load reads the chart.
func Load() (*chart.Chart, error) {
	ch, err := loader.LoadDir(Dir())
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", Dir(), err)
	}
	return ch, nil
}

// Render renders the chart as `helm template` does, for a release named
// release in namespace, with vals over the chart's values; the manifest
// comes out in Helm's install order, each object headed by its template.
func Render(release, namespace string, vals map[string]any) (string, error) {
	ch, err := Load()
	if err != nil {
		return "", err
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = release, namespace
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return "", fmt.Errorf("render chart %s: %w", Dir(), err)
	}
	return rel.Manifest, nil
}

// PlainValues are the values the plain manifest is rendered with: the
// chart's defaults, with the example repository and the credentials Secret
// the manifest ships a stub of.
func PlainValues() map[string]any {
	return map[string]any{"git": map[string]any{
		"url":         "https://git.example.com/platform/addons.git",
		"credentials": map[string]any{"existingSecret": "addon-operator-git", "tokenKey": "token"},
	}}
}

const header = `# GENERATED from deploy/chart/addon-operator by ` + "`make manifest`" + ` (helm template with
# the chart's default values, the example repository and a token Secret);
# edit the chart, not this file (TestManifestUpToDate keeps them equal).
#
# addon-operator in its own namespace, following a git repository.
# kubectl apply -f deploy/addon-operator.yaml, after editing GIT_URL and the
# credentials Secret; or, better, helm install the chart (docs/operator.md,
# "Installing with Helm"). Least privilege: the operator's own needs are the
# namespaced Role below; what your modules' charts create needs rules of its
# own (the chart's rbac.modules values; see the commented example at the end).
apiVersion: v1
kind: Namespace
metadata:
  name: addon-operator
---
apiVersion: v1
kind: Secret
metadata:
  name: addon-operator-git
  namespace: addon-operator
type: Opaque
stringData:
  token: "replace-me"
  # For POST /hooks/git, add a random key and set GIT_WEBHOOK_SECRET_FILE
  # (the chart's git.credentials.webhookSecretKey); an empty key is refused
  # at start-up:
  #   webhook-secret: <output of ` + "`openssl rand -hex 32`" + `>
`

const trailer = `# ---
# # What the modules' charts create is yours to grant, as narrowly as your
# # modules allow (the chart's rbac.modules.rules, narrowed to namespaces
# # by rbac.modules.namespaces). For example, charts that create
# # Deployments, Services and ConfigMaps in the operator's namespace:
# apiVersion: rbac.authorization.k8s.io/v1
# kind: Role
# metadata: {name: addon-operator-modules, namespace: addon-operator}
# rules:
#   - apiGroups: ["", apps]
#     resources: [deployments, services, configmaps]
#     verbs: [get, list, watch, create, update, patch, delete]
# ---
# # Modules with a crds/ directory: the operator applies those CRDs
# # (rbac.modules.clusterRules).
# #   - apiGroups: [apiextensions.k8s.io]
# #     resources: [customresourcedefinitions]
# #     verbs: [get, create, update]
# # Hooks with kubernetesValidating or kubernetesMutating bindings: the
# # operator writes one ValidatingWebhookConfiguration (and
# # MutatingWebhookConfiguration), named by
# # VALIDATING_WEBHOOK_CONFIGURATION_NAME; with
# # kubernetesCustomResourceConversion bindings it sets the CRDs'
# # spec.conversion (docs/operator.md, "Validating and conversion webhooks").
# # Mount the serving certificate (a kubernetes.io/tls Secret with ca.crt)
# # at /validating-certs and /conversion-certs, add Services named
# # addon-operator-validating-svc (port 443 -> 9680) and
# # addon-operator-conversion-svc (443 -> 9681), and put the API server's
# # addresses into the addon-operator-webhooks NetworkPolicy above.
# #   - apiGroups: [admissionregistration.k8s.io]
# #     resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations]
# #     verbs: [get, create, update, delete]
# #   - apiGroups: [apiextensions.k8s.io]
# #     resources: [customresourcedefinitions]
# #     verbs: [get, list, update]
# # Kinds your hooks' kubernetes bindings watch need list and watch (the
# # kinds themselves are resolved through discovery, which every
# # authenticated client may read). For example, a hook that watches
# # Namespaces cluster-wide:
# apiVersion: rbac.authorization.k8s.io/v1
# kind: ClusterRole
# metadata: {name: addon-operator-hooks}
# rules:
#   - apiGroups: [""]
#     resources: [namespaces]
#     verbs: [list, watch]
# ---
# apiVersion: rbac.authorization.k8s.io/v1
# kind: ClusterRoleBinding
# metadata: {name: addon-operator-hooks}
# roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: addon-operator-hooks}
# subjects: [{kind: ServiceAccount, name: addon-operator, namespace: addon-operator}]
`

// Manifest is the plain manifest: the Namespace and a credentials Secret
// stub (a chart takes an existing Secret and its namespace from helm),
// the chart rendered with PlainValues, and the commented example rules for
// modules.
func Manifest() (string, error) {
	m, err := Render(Name, Name, PlainValues())
	if err != nil {
		return "", err
	}
	// the chart's CRDs (crds/, which helm template leaves out) come first:
	// kubectl apply creates them before the objects of their kinds
	ch, err := Load()
	if err != nil {
		return "", err
	}
	var crds strings.Builder
	for _, f := range ch.CRDObjects() {
		crds.WriteString("---\n# Source: " + f.Filename + "\n" + strings.TrimRight(string(f.File.Data), "\n") + "\n")
	}
	return header + crds.String() + strings.TrimRight(m, "\n") + "\n" + trailer, nil
}

// Generate writes the plain manifest and the chart's copy of the alert
// rules.
func Generate() error {
	m, err := Manifest()
	if err != nil {
		return err
	}
	if err := os.WriteFile(ManifestPath(), []byte(m), 0o644); err != nil {
		return err
	}
	rules, err := os.ReadFile(RulesPath())
	if err != nil {
		return err
	}
	return os.WriteFile(ChartRulesPath(), rules, 0o644)
}
