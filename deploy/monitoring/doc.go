// Package monitoring holds the monitoring kit's files (alert rules, their
// PrometheusRule, the Grafana dashboard) and the tests that check them with
// promtool; Queries lists every query they run, for the test that
// evaluates them against a real Prometheus scraping a real operator
// (cmd/addon-operator). See docs/operator.md, "Monitoring".
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// RuleFile is a Prometheus rule file's shape, as far as the kit uses it.
type RuleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ReadRules reads rules.yaml in dir.
func ReadRules(dir string) (*RuleFile, error) {
	b, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		return nil, err
	}
	var f RuleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("rules.yaml: %w", err)
	}
	return &f, nil
}

// Query is one query of the kit: an alert's expression or a dashboard
// panel's.
type Query struct{ Where, Expr string }

// Queries lists the alert and dashboard queries of the kit in dir.
func Queries(dir string) ([]Query, error) {
	rules, err := ReadRules(dir)
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out = append(out, Query{Where: "alert " + r.Alert, Expr: r.Expr})
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "dashboard.json"))
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		return nil, fmt.Errorf("dashboard.json: %w", err)
	}
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			out = append(out, Query{Where: "panel " + p.Title, Expr: t.Expr})
		}
	}
	return out, nil
}
