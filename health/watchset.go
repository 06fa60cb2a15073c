package health

// watchSet is the tracker's open watches, one per kind and namespace,
// each with the objects that need it by name. Under Tracker.mu.
type watchSet struct {
	keys map[watchKey]*watch
}

// attach adds o to the watch of its kind and namespace, a new one when
// none runs; the caller starts it.
func (ws *watchSet) attach(o *object) *watch {
	key := watchKey{o.ref.APIVersion, o.ref.Kind, o.ref.Namespace}
	w := ws.keys[key]
	if w == nil || w.stopped {
		w = &watch{key: key, byName: map[string][]*object{}}
		ws.keys[key] = w
	}
	w.byName[o.ref.Name] = append(w.byName[o.ref.Name], o)
	return w
}

// detach removes o from its watch; the watch's monitor is returned when no
// object needs it any more.
func (ws *watchSet) detach(o *object) Monitor {
	w := o.w
	if w == nil {
		return nil
	}
	objs := w.byName[o.ref.Name]
	for i, x := range objs {
		if x == o {
			objs = append(objs[:i], objs[i+1:]...)
			break
		}
	}
	if len(objs) == 0 {
		delete(w.byName, o.ref.Name)
	} else {
		w.byName[o.ref.Name] = objs
	}
	if len(w.byName) > 0 {
		return nil
	}
	w.stopped = true
	if ws.keys[w.key] == w {
		delete(ws.keys, w.key)
	}
	return w.mon // nil while it starts: start stops it
}
