package lifecycle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/lifecycle/driftcheck"
)

// BenchmarkDriftEditToStatus: the time from a hand edit of a Deployment's
// image to its drift on /status, with the interval at an hour (the edit's
// own check), over 10 modules edited one after another; each round edits
// them and the next puts the chart's image back (drift gone from /status),
// a spacing apart (docs/benchmarks.md, "Drift checks").
func BenchmarkDriftEditToStatus(b *testing.B) {
	const modules = 10
	files := map[string]string{"modules/values.yaml": ""}
	for i := range modules {
		name := fmt.Sprintf("web%d", i)
		files["modules/values.yaml"] += name + "Enabled: true\n"
		dir := fmt.Sprintf("modules/%03d-%s/", i+1, name)
		files[dir+"Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
		files[dir+"templates/web.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name +
			"\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: " + name + "}\n  template:\n    metadata:\n      labels: {app: " + name +
			"}\n    spec:\n      containers:\n      - name: app\n        image: registry.example/web:1\n"
	}
	e := setup(b, files, nil)
	e.withDriftOnEdits(b)
	prev := e.configure
	e.configure = func(cfg *Config) {
		prev(cfg)
		cfg.DriftMode = DriftWarn
	}
	e.start()
	e.waitReady()
	for i := range modules {
		e.followed(fmt.Sprintf("web%d", i))
	}
	deployments := client.AppsV1().Deployments(e.ns)
	var took []time.Duration
	b.ResetTimer()
	for round := range b.N {
		if round > 0 {
			time.Sleep(driftcheck.DefaultSpacing) // the modules' last checks
		}
		image, drifted := "registry.example/web:hand", true
		if round%2 == 1 {
			image, drifted = "registry.example/web:1", false
		}
		for i := range modules {
			name := fmt.Sprintf("web%d", i)
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d, err := deployments.Get(b.Context(), name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				d.Spec.Template.Spec.Containers[0].Image = image
				_, err = deployments.Update(b.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			e.eventually(name+"'s edit on /status", func() bool { return (e.moduleStatus(name).Drift != nil) == drifted })
			took = append(took, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "ms-p50")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "ms-max")
	b.ReportMetric(float64(len(took)), "edits")
}
