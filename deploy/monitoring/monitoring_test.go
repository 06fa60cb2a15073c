package monitoring

import (
	"os"
	"os/exec"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Fatal("promtool is missing: run hack/ensure-deps.sh (Debian's prometheus package)")
	}
	out, err := exec.Command("promtool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
}

func TestRulesCheck(t *testing.T) { promtool(t, "check", "rules", "rules.yaml") }

// Every alert fires in its case of rules_test.yaml and stays quiet in the other.
func TestRulesUnitTests(t *testing.T) {
	promtool(t, "test", "rules", "rules_test.yaml")
	rules, err := ReadRules(".")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	b, err := os.ReadFile("rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("alert %s: rules_test.yaml needs a case where it fires and one where it does not", r.Alert)
			}
		}
	}
}

// The PrometheusRule carries exactly rules.yaml's groups.
func TestPrometheusRuleMatchesRules(t *testing.T) {
	rules, err := ReadRules(".")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Spec       RuleFile `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %s %s", pr.APIVersion, pr.Kind)
	}
	if !reflect.DeepEqual(pr.Spec, *rules) {
		t.Fatal("prometheusrule.yaml's spec differs from rules.yaml: copy rules.yaml's groups under spec")
	}
}

func TestDashboardQueries(t *testing.T) {
	qs, err := Queries(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 20 {
		t.Fatalf("%d queries", len(qs))
	}
	for _, q := range qs {
		if q.Expr == "" {
			t.Errorf("%s: no expression", q.Where)
		}
	}
}
