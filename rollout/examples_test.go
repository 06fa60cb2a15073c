package rollout

import (
	"strings"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
)

// The worked fleet of examples/fleet (docs/operator.md, "Fleets") reads
// as its README says: canary in ring 0 under the weekend freeze, eu-1
// and eu-2 in ring 1 after canary, in office hours.
func TestExampleFleet(t *testing.T) {
	want := map[string]string{
		"canary": `ring 0; deny window "weekend-freeze" "0 18 * * 5" for 62h (Europe/Berlin)`,
		"eu-1": `ring 1 after all of ring 0 healthy (canary), soak 30m0s; allow window "office-hours" "0 9 * * 1-5" for 8h (Europe/Berlin); ` +
			`deny window "weekend-freeze" "0 18 * * 5" for 62h (Europe/Berlin)`,
	}
	want["eu-2"] = want["eu-1"]
	for cluster, summary := range want {
		cfg, err := clusterconfig.Load(t.Context(), "../examples/fleet", clusterconfig.Settings{Cluster: cluster,
			Layers:           []clusterconfig.Layer{{Path: "clusters/common.yaml"}, {Path: "clusters/{cluster}/config.yaml"}},
			OperatorSections: Sections})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(cfg, strings.Join(cfg.OperatorFiles, ", "), true, t0)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Summary(); got != summary {
			t.Errorf("%s:\n got %s\nwant %s", cluster, got, summary)
		}
		if cluster != "canary" {
			if _, err := Parse(cfg, "", false, t0); err == nil {
				t.Errorf("%s: ring 1 without a forge to read accepted", cluster)
			}
		}
	}
}
