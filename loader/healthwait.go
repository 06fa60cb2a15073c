package loader

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"
)

// HealthWaitAnnotation in a module's Chart.yaml asks that what comes after
// the module in a reload (the next weights, the afterAll hooks) wait until
// it is Healthy: "true" waits at most its health progress timeout, a Go
// duration ("10m") at most that long (docs/operator.md, "Health waits").
const HealthWaitAnnotation = "addonops.io/health-wait"

// MaxHealthWait bounds a wait's duration: while it holds, the rest of
// "main" that is not a change (hooks' events and schedules in "main",
// auto-healing, drift corrections) waits too.
const MaxHealthWait = time.Hour

// HealthWait is what a module's Chart.yaml asks of the modules after it.
type HealthWait struct {
	// On: later weights wait until the module is Healthy.
	On bool
	// Timeout bounds the wait; 0 is the module's progress timeout.
	Timeout time.Duration
}

// readHealthWait reads the annotation from Chart.yaml. Helm reads the
// file too, later, and refuses an annotation that is not a string; read
// here, such a mistake refuses the tree at load, naming the file, before
// anything runs.
func readHealthWait(d dir) (HealthWait, error) {
	b, err := d.readFile("Chart.yaml")
	if err != nil {
		return HealthWait{}, err
	}
	var chart struct {
		Annotations map[string]any `json:"annotations"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return HealthWait{}, fileErr(d.path("Chart.yaml"), err)
	}
	v, ok := chart.Annotations[HealthWaitAnnotation]
	if !ok {
		return HealthWait{}, nil
	}
	w, err := parseHealthWait(v)
	if err != nil {
		return HealthWait{}, fileErr(d.path("Chart.yaml"), fmt.Errorf("annotations.%s: %w", HealthWaitAnnotation, err))
	}
	return w, nil
}

func parseHealthWait(v any) (HealthWait, error) {
	s, ok := v.(string)
	if !ok {
		return HealthWait{}, fmt.Errorf("%v is not a string: quote it (Helm reads annotations as strings)", v)
	}
	switch s {
	case "true":
		return HealthWait{On: true}, nil
	case "false":
		return HealthWait{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return HealthWait{}, errors.New(strconv.Quote(s) + ` is neither "true", "false" nor a positive duration ("10m")`)
	}
	if d > MaxHealthWait {
		return HealthWait{}, fmt.Errorf("%s is over the longest wait, %s: a wait holds \"main\"", s, MaxHealthWait)
	}
	return HealthWait{On: true, Timeout: d}, nil
}
