package binding

import (
	"sync"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// waitingEvents coalesces a binding's events per object while they wait
// behind a failing task (docs/operator.md, "Kubernetes bindings"): a newer
// event of an object whose event has not started running yet replaces it
// instead of queueing another run, so such a queue holds at most one
// event per object and binding, however often the objects change. While
// nothing fails, every event runs.
type waitingEvents struct {
	mu sync.Mutex
	m  map[string]*waitingEvent
}

// waitingEvent is one object's newest event that no run has taken yet.
type waitingEvent struct {
	ev kube.ObjectEvent
}

// eventKey names an object's events of one binding in one queue.
func eventKey(queueName string, h *loader.Hook, binding, kind string, ev kube.ObjectEvent) string {
	return queueName + "\x00" + h.Key() + "\x00" + binding + "\x00" + kind + "\x00" + ev.Namespace + "/" + ev.Name
}

// offer records ev under key. It returns the new waiting event to queue a
// run for, or nil when coalesce is set, an event of that object was
// waiting already and ev took its place. An Added followed by a Modified
// stays an Added (of the newest object), so the hook still learns that the
// object is new.
func (w *waitingEvents) offer(key string, ev kube.ObjectEvent, coalesce bool) *waitingEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.m[key]; old != nil && coalesce {
		if old.ev.Type == loader.EventAdded && ev.Type == loader.EventModified {
			ev.Type = loader.EventAdded
		}
		old.ev = ev
		return nil
	}
	if w.m == nil {
		w.m = map[string]*waitingEvent{}
	}
	we := &waitingEvent{ev: ev}
	w.m[key] = we
	return we
}

// take is called when a run starts: the event stops waiting (a later one
// of the object queues a run of its own) and is what the run gets.
func (w *waitingEvents) take(key string, we *waitingEvent) kube.ObjectEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[key] == we {
		delete(w.m, key)
	}
	return we.ev
}

// latestPerObject keeps, of activations with the same object key, only the
// last: a run that is retried after newer events of its objects joined it
// runs with the newest only.
func latestPerObject(acts []activation) []activation {
	last := map[string]int{}
	for i, a := range acts {
		if a.object != "" {
			last[a.object] = i
		}
	}
	out := acts[:0:0]
	for i, a := range acts {
		if a.object == "" || last[a.object] == i {
			out = append(out, a)
		}
	}
	return out
}
