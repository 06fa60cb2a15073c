package chart

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/testmanifest"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// The chart passes helm lint (its Chart.yaml, values and every template
// rendered) with no warning, at the control plane's Kubernetes version.
func TestLint(t *testing.T) {
	kv := &chartutil.KubeVersion{Version: "v1.37.1", Major: "1", Minor: "37"}
	l := lint.AllWithKubeVersion(Dir(), PlainValues(), Name, kv)
	for _, m := range l.Messages {
		t.Log(m)
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

// deploy/addon-operator.yaml is the chart's render, and the chart's alert
// rules are deploy/monitoring's: `make manifest` after editing either.
func TestManifestUpToDate(t *testing.T) {
	want, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from the chart's render: run `make manifest`", ManifestPath())
	}
	a, err := os.ReadFile(RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ChartRulesPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s differs from %s: run `make manifest`", ChartRulesPath(), RulesPath())
	}
}

// objects decodes a rendered manifest, keyed by "Kind name" (with
// "/namespace" for the namespaced objects of other namespaces).
func objects(t *testing.T, manifest string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, obj := range testmanifest.FromString(t, manifest) {
		key := obj.GetKind() + " " + obj.GetName()
		if ns := obj.GetNamespace(); ns != "" && ns != "ops" {
			key += "/" + ns
		}
		if out[key] != nil {
			t.Fatalf("%s rendered twice", key)
		}
		out[key] = obj
	}
	return out
}

// env is the operator container's environment as name=value.
func env(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]string {
	t.Helper()
	d := objs["Deployment ops-addon-operator"]
	if d == nil {
		t.Fatal("no Deployment")
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	out := map[string]string{}
	list, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
	for _, e := range list {
		m := e.(map[string]any)
		out[m["name"].(string)] = m["value"].(string)
	}
	return out
}

func volumes(objs map[string]*unstructured.Unstructured) map[string]string {
	pod, _, _ := unstructured.NestedMap(objs["Deployment ops-addon-operator"].Object, "spec", "template", "spec")
	vs, _, _ := unstructured.NestedSlice(pod, "volumes")
	out := map[string]string{}
	for _, v := range vs {
		m := v.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "secret", "secretName")
		out[m["name"].(string)] = name
	}
	return out
}

func vals(t *testing.T, doc string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRender(t *testing.T) {
	rules, err := os.ReadFile(RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	var ruleFile map[string]any
	if err := sigsyaml.Unmarshal(rules, &ruleFile); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, values string
		err          string // a render error containing this
		check        func(t *testing.T, objs map[string]*unstructured.Unstructured)
	}{
		{name: "no git URL", values: `{}`, err: "git.url is required"},
		// values.schema.json: a misspelt key is refused, not ignored
		{name: "misspelt key", values: "git: {url: u, credentals: {existingSecret: s}}", err: "credentals"},
		{name: "replicas as text", values: "git: {url: u}\nreplicas: two", err: "replicas"},
		{name: "webhooks admitted from anywhere", values: "git: {url: u}\nnetworkPolicy: {webhooksFrom: []}", err: "webhooksFrom must name"},
		{name: "defaults", values: "git: {url: https://x/y.git}", check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			e := env(t, objs)
			if e["GIT_URL"] != "https://x/y.git" || e["ADDON_OPERATOR_LEADER_ELECTION"] != "true" || e["ADDON_OPERATOR_VALUES_SECRET"] != "addon-operator-values" {
				t.Errorf("env %v", e)
			}
			for _, k := range []string{"GIT_TOKEN_FILE", "ADDON_OPERATOR_CLUSTER_NAME", "ADDON_OPERATOR_SOPS_KEY_FILE"} {
				if _, ok := e[k]; ok {
					t.Errorf("%s set by default", k)
				}
			}
			for _, k := range []string{"ServiceMonitor ops-addon-operator", "PrometheusRule ops-addon-operator", "ClusterRole ops-addon-operator-modules", "ClusterRoleBinding ops-addon-operator-modules"} {
				if objs[k] != nil {
					t.Errorf("%s rendered by default", k)
				}
			}
			for _, k := range []string{"NetworkPolicy ops-addon-operator", "NetworkPolicy ops-addon-operator-webhooks", "Role ops-addon-operator", "RoleBinding ops-addon-operator", "ServiceAccount ops-addon-operator", "Service ops-addon-operator"} {
				if objs[k] == nil {
					t.Errorf("no %s", k)
				}
			}
		}},
		{name: "credentials and config in git", values: `
git:
  url: ssh://git@x/y.git
  credentials: {existingSecret: creds, sshKeyKey: id_ed25519, knownHostsKey: known_hosts, webhookSecretKey: hook, username: bot}
cluster: {name: prod-eu, config: "clusters/common.yaml,clusters/{cluster}/", sopsKeysSecret: age}
valuesSecret: ""
leaderElection: false
`, check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			e := env(t, objs)
			want := map[string]string{
				"GIT_SSH_KEY_FILE": "/etc/addon-operator/git/id_ed25519", "GIT_KNOWN_HOSTS_FILE": "/etc/addon-operator/git/known_hosts",
				"GIT_WEBHOOK_SECRET_FILE": "/etc/addon-operator/git/hook", "GIT_USERNAME": "bot",
				"ADDON_OPERATOR_CLUSTER_NAME": "prod-eu", "ADDON_OPERATOR_CLUSTER_CONFIG": "clusters/common.yaml,clusters/{cluster}/",
				"ADDON_OPERATOR_SOPS_KEY_FILE": "/etc/addon-operator/sops", "ADDON_OPERATOR_LEADER_ELECTION": "false",
			}
			for k, v := range want {
				if e[k] != v {
					t.Errorf("%s = %q, want %q", k, e[k], v)
				}
			}
			if _, ok := e["ADDON_OPERATOR_VALUES_SECRET"]; ok {
				t.Error("values Secret set")
			}
			if v := volumes(objs); v["git-credentials"] != "creds" || v["sops-keys"] != "age" {
				t.Errorf("volumes %v", v)
			}
			role := objs["Role ops-addon-operator"]
			rs, _, _ := unstructured.NestedSlice(role.Object, "rules")
			for _, r := range rs {
				m := r.(map[string]any)
				if m["resourceNames"] != nil || reflect.DeepEqual(m["resources"], []any{"leases"}) {
					t.Errorf("rule %v without a values Secret or leader election", m)
				}
			}
			if s, _, _ := unstructured.NestedString(objs["Deployment ops-addon-operator"].Object, "spec", "strategy", "type"); s != "Recreate" {
				t.Errorf("strategy %s without leader election", s)
			}
		}},
		{name: "modules' rules cluster-wide", values: `
git: {url: u}
rbac: {modules: {rules: [{apiGroups: [apps], resources: [deployments], verbs: [get]}], clusterRules: [{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [get]}]}}
`, check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			for _, k := range []string{"ClusterRole ops-addon-operator-modules", "ClusterRoleBinding ops-addon-operator-modules", "ClusterRole ops-addon-operator-modules-cluster", "ClusterRoleBinding ops-addon-operator-modules-cluster"} {
				if objs[k] == nil {
					t.Errorf("no %s", k)
				}
			}
		}},
		{name: "modules' rules narrowed", values: `
git: {url: u}
rbac: {modules: {rules: [{apiGroups: [apps], resources: [deployments], verbs: [get]}], namespaces: [a, b]}}
`, check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			for _, k := range []string{"ClusterRole ops-addon-operator-modules", "RoleBinding ops-addon-operator-modules/a", "RoleBinding ops-addon-operator-modules/b"} {
				if objs[k] == nil {
					t.Errorf("no %s", k)
				}
			}
			if objs["ClusterRoleBinding ops-addon-operator-modules"] != nil {
				t.Error("a ClusterRoleBinding with namespaces")
			}
		}},
		{name: "monitoring", values: "git: {url: u}\nserviceMonitor: {enabled: true}\nprometheusRule: {enabled: true, labels: {release: kp}}\nnetworkPolicy: {enabled: false}", check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			pr := objs["PrometheusRule ops-addon-operator"]
			if pr == nil || objs["ServiceMonitor ops-addon-operator"] == nil {
				t.Fatal("no ServiceMonitor or PrometheusRule")
			}
			if pr.GetLabels()["release"] != "kp" {
				t.Errorf("labels %v", pr.GetLabels())
			}
			groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
			if !reflect.DeepEqual(groups, ruleFile["groups"]) {
				t.Error("the PrometheusRule's groups differ from deploy/monitoring/rules.yaml")
			}
			for k := range objs {
				if strings.HasPrefix(k, "NetworkPolicy") {
					t.Errorf("%s with networkPolicy.enabled false", k)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Render("ops", "ops", vals(t, tc.values))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, objects(t, m))
		})
	}
}
