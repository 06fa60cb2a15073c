package modulestatus

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Recorder records Events: on the values ConfigMap (Event) or on an
// object of its namespace (EventOn); kube.ConfigMap is one.
type Recorder interface {
	Event(ctx context.Context, eventType, reason, message string) error
	EventOn(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message string) error
}

// Refs knows the Module objects this process writes (Kube).
type Refs interface {
	Ref(name string) (corev1.ObjectReference, bool)
}

var _ Refs = (*Kube)(nil)

// Events records the Events about one module on its Module object when
// this process writes it (the API server serves the CRD, this replica is
// the leader and has written or read the object), and on the values
// ConfigMap otherwise: before the object's first write, after its module
// left the tree, on a standby, or with the objects off (docs/operator.md,
// "Events"). It adds no Event of its own: each caller records a module's
// Event once per new problem, as it did on the ConfigMap.
type Events struct {
	refs Refs // nil: Module objects off
	rec  Recorder
}

// NewEvents routes modules' Events; objects is the Module objects' client
// (nil, or one that is not a Refs: every Event on the ConfigMap).
func NewEvents(objects Client, rec Recorder) *Events {
	e := &Events{rec: rec}
	if r, ok := objects.(Refs); ok {
		e.refs = r
	}
	return e
}

// ModuleEvent records an Event of eventType (Normal or Warning) about
// module.
func (e *Events) ModuleEvent(ctx context.Context, module, eventType, reason, message string) error {
	if e.refs != nil {
		if ref, ok := e.refs.Ref(module); ok {
			return e.rec.EventOn(ctx, ref, eventType, reason, message)
		}
	}
	return e.rec.Event(ctx, eventType, reason, message)
}

// OnObject says whether an Event about module goes to its Module object
// now: a caller that records one Event per problem records it again once
// the object is there, when it went to the ConfigMap (a first run that
// fails before the object is written).
func (e *Events) OnObject(module string) bool {
	if e.refs == nil {
		return false
	}
	_, ok := e.refs.Ref(module)
	return ok
}

// ModuleWarning records a Warning Event about module.
func (e *Events) ModuleWarning(ctx context.Context, module, reason, message string) error {
	return e.ModuleEvent(ctx, module, corev1.EventTypeWarning, reason, message)
}
