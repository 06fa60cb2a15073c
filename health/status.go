package health

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/addonops/addon-operator/kube"
)

// Status is a module's health.
type Status string

// Module health statuses, best first.
const (
	// Healthy: every object of the release is Current.
	Healthy Status = "Healthy"
	// Progressing: an object is rolling out, within the progress timeout.
	Progressing Status = "Progressing"
	// Unknown: an object's status cannot be told (its watch has not
	// listed, its kind is not served, the release could not be read).
	Unknown Status = "Unknown"
	// Degraded: an object failed, broke without a rollout, or did not
	// become Current within the progress timeout.
	Degraded Status = "Degraded"
)

// Statuses are the statuses, in the order the metrics list them.
var Statuses = []Status{Healthy, Progressing, Unknown, Degraded}

// rank orders statuses for the worst-of rule: Degraded, then
// Progressing, then Unknown, then Healthy (docs/operator.md, "Health").
func rank(s Status) int {
	switch s {
	case Degraded:
		return 3
	case Progressing:
		return 2
	case Unknown:
		return 1
	}
	return 0
}

// Object statuses beside kstatus's own (Current, InProgress, Failed,
// Terminating, Unknown).
const (
	objectNotFound = string(kstatus.NotFoundStatus)
	objectCurrent  = string(kstatus.CurrentStatus)
)

// ObjectHealth is one object that is not Current, as /status shows it.
type ObjectHealth struct {
	kube.ObjectRef
	// Status is kstatus's: InProgress, Failed, Terminating, NotFound or
	// Unknown.
	Status string `json:"status"`
	// Health is the object's part in its module's status: Progressing,
	// Degraded or Unknown.
	Health Status `json:"health"`
	// Message is kstatus's message, or ours (why it counts as Degraded).
	Message string `json:"message,omitempty"`
}

// ModuleHealth is a module's health.
type ModuleHealth struct {
	Status Status `json:"status"`
	// Message is one line: the first object not Current and why.
	Message string `json:"message,omitempty"`
	// Objects are the objects that are not Current (all of them Current:
	// none), sorted.
	Objects []ObjectHealth `json:"objects,omitempty"`
	// Total is how many objects the release has.
	Total int `json:"total"`
	// Revision is the release revision whose objects these are.
	Revision int `json:"revision,omitempty"`
	// Since is when the module took this status.
	Since time.Time `json:"since"`
}

// Transition is a change of a module's status, as the listener hears it.
type Transition struct {
	Module string
	// From is "" for a module's first status.
	From   Status
	Health ModuleHealth
}

// summary is what a watch keeps of an object for health: its kstatus and
// generation, not the object (docs/benchmarks.md, "Health"), and the
// fingerprint of what it says, so a hand edit is told to the drift checks
// (docs/operator.md, "Drift").
type summary struct {
	Status      string
	Message     string
	Generation  int64
	Fingerprint uint64
	// UID tells a recreated object from the one before it
	UID string
}

// Summarize computes an object's kstatus; it is the watches' filter.
func Summarize(obj map[string]any) any {
	u := &unstructured.Unstructured{Object: obj}
	s := summary{Generation: u.GetGeneration(), Fingerprint: fingerprint(obj), UID: string(u.GetUID())}
	res, err := kstatus.Compute(u)
	if err != nil {
		s.Status, s.Message = string(kstatus.UnknownStatus), err.Error()
		return s
	}
	s.Status, s.Message = string(res.Status), res.Message
	return s
}
