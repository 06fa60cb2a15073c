package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
)

// countingDetector counts the drift checks of a real detector.
type countingDetector struct {
	DriftDetector
	checks atomic.Int64
}

var _ DriftDetector = (*countingDetector)(nil)

func (c *countingDetector) Check(ctx context.Context, release string) (drift.Report, bool, error) {
	c.checks.Add(1)
	return c.DriftDetector.Check(ctx, release)
}

// withDriftOnEdits wires a real detector (counted) and a real health
// tracker that tells the operator of edits, as start does, with the
// interval at an hour: only edits can make a check.
func (e *env) withDriftOnEdits(t testing.TB) *countingDetector {
	e.checkInterval = time.Hour
	det := &countingDetector{}
	e.configure = func(cfg *Config) {
		det.DriftDetector = e.detector(t)
		cfg.Drift = det
		cfg.Edits = NewEditInbox()
		cfg.Health = e.withHealth(health.Options{ProgressTimeout: time.Hour, OnEdited: cfg.Edits.Edited})
	}
	return det
}

// followed waits until the health tracker has listed the module's objects.
func (e *env) followed(module string) {
	e.t.Helper()
	e.eventually(module+" followed by health", func() bool {
		h := e.moduleStatus(module).Health
		return h != nil && h.Status != health.Unknown
	})
}

// A hand edit is found within seconds, with the interval at an hour: in
// warn mode reported on /status, in correct mode corrected; a status-only
// update before it makes no check.
func TestDriftOnEdit(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, webModule(), map[string]string{"webDrift": "warn"})
	det := e.withDriftOnEdits(t)
	e.start()
	e.waitReady()
	e.followed("web")
	ctx := t.Context()
	deployments := client.AppsV1().Deployments(e.ns)

	// a controller's write: status only, no check
	before := det.checks.Load()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas = d.Generation, 1, 1
		_, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(driftcheck.DefaultQuiet + time.Second)
	if n := det.checks.Load() - before; n != 0 {
		t.Fatalf("a status-only update made %d drift checks", n)
	}

	// warn: reported within seconds
	start := time.Now()
	handEditImage(t, e.ns, "registry.example/web:hand")
	e.eventually("the edit on /status", func() bool { return e.moduleStatus("web").Drift != nil })
	// within the spacing (a check waits for quiet, at most DefaultSpacing),
	// with room for a loaded machine running the parallel tests
	if took := time.Since(start); took > driftcheck.DefaultSpacing+10*time.Second {
		t.Fatalf("the edit took %s to reach /status", took)
	}
	if st := e.moduleStatus("web"); st.Drift.Mode != DriftWarn || len(st.Drift.Objects) != 1 {
		t.Fatalf("drift on /status: %+v", st.Drift)
	}
	// the Event is recorded just after /status shows the drift
	e.eventually("a Drifted Event", func() bool { return e.events("Drifted") > 0 })
	if n := e.events("Drifted"); n != 1 {
		t.Fatalf("%d Drifted Events, want 1", n)
	}

	// correct (the default, once the override goes): put back within seconds
	e.setConfigMap(map[string]string{})
	e.eventually("the ConfigMap without webDrift", func() bool { return len(e.op.trees.Load().ConfigData) == 0 })
	e.idle()
	handEditImage(t, e.ns, "registry.example/web:again")
	start = time.Now()
	image := func() string {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	e.eventually("the chart's image back", func() bool { return image() == "registry.example/web:1" })
	// the first edit's check was under driftcheck.DefaultSpacing ago
	if took := time.Since(start); took > driftcheck.DefaultSpacing+5*time.Second {
		t.Fatalf("the correction took %s", took)
	}
	e.eventually("no drift on /status", func() bool { return e.moduleStatus("web").Drift == nil })
}

// Checks on edits are bounded per module: a burst of edits is one check;
// a writer that never stops is checked once per spacing, not once per
// write, and not only when it stops.
func TestDriftOnEditBounded(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, webModule(), map[string]string{"webDrift": "warn"})
	quietFor, spacing := time.Second, 3*time.Second
	det := e.withDriftOnEdits(t)
	withDrift := e.configure
	e.configure = func(cfg *Config) {
		withDrift(cfg)
		cfg.driftQuiet, cfg.driftSpacing = quietFor, spacing
	}
	e.start()
	e.waitReady()
	e.followed("web")
	ctx := t.Context()

	before := det.checks.Load()
	const burst = 20
	began := time.Now()
	for i := range burst {
		handEditImage(t, e.ns, fmt.Sprintf("registry.example/web:burst%d", i))
	}
	// a loaded machine may stretch the burst: at most one check per
	// spacing while it lasts, and one after it
	most := 2 + int64(time.Since(began)/spacing)
	e.eventually("the burst on /status", func() bool { return e.moduleStatus("web").Drift != nil })
	time.Sleep(spacing + quietFor)
	if n := det.checks.Load() - before; n < 1 || n > most {
		t.Fatalf("a burst of %d edits made %d checks, want 1 to %d", burst, n, most)
	}

	// a controller that writes every 100ms for 3.5 spacings: checked during
	// the writes, once per spacing
	before = det.checks.Load()
	writes := 0
	var during int64
	deadline := time.Now().Add(spacing*7/2 + spacing/4)
	for i := 0; time.Now().Before(deadline); i++ {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := client.AppsV1().Deployments(e.ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations["example.com/heartbeat"] = fmt.Sprint(i)
			_, err = client.AppsV1().Deployments(e.ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "busy-controller"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		writes++
		time.Sleep(100 * time.Millisecond)
	}
	during = det.checks.Load() - before
	time.Sleep(spacing + quietFor)
	total := det.checks.Load() - before
	t.Logf("%d writes: %d checks while writing, %d in all", writes, during, total)
	if during < 2 || total > 6 {
		t.Fatalf("%d writes over %s made %d checks while writing (want ≥ 2) and %d in all (want ≤ 6)",
			writes, spacing*7/2, during, total)
	}
}
