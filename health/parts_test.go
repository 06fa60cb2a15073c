package health

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// Unit tests of the Tracker's parts: what an edit is, its listeners'
// queue, its open watches, the progress timeout.

func TestObjectEdited(t *testing.T) {
	t.Parallel()
	seenAt := func(gen int64, fp uint64) *object {
		return &object{seen: true, sum: summary{Generation: gen, Fingerprint: fp, UID: "u"}}
	}
	tests := []struct {
		name string
		o    *object
		typ  string
		s    summary
		want bool
	}{
		{"an update that changed the fingerprint", seenAt(1, 1), loader.EventModified, summary{Generation: 1, Fingerprint: 2, UID: "u"}, true},
		{"a status-only update", seenAt(1, 1), loader.EventModified, summary{Generation: 1, Fingerprint: 1, UID: "u"}, false},
		{"an object not seen yet (the first list)", &object{}, loader.EventModified, summary{Fingerprint: 2}, false},
		{"a creation", seenAt(1, 1), loader.EventAdded, summary{Fingerprint: 2, UID: "u"}, false},
		{"a deletion", seenAt(1, 1), loader.EventDeleted, summary{Fingerprint: 2, UID: "u"}, false},
		{"an event older than Refresh read", &object{seen: true, sum: summary{Generation: 2, Fingerprint: 1, UID: "u"}, fresh: 2, freshUID: "u"},
			loader.EventModified, summary{Generation: 1, Fingerprint: 3, UID: "u"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.o.edited(tt.typ, tt.s); got != tt.want {
				t.Fatalf("edited = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNotifier(t *testing.T) {
	t.Parallel()
	newN := func(onEdited func(string), onTransition func(Transition)) *notifier {
		return &notifier{onTransition: onTransition, onEdited: onEdited, logger: slog.New(slog.DiscardHandler), wake: make(chan struct{}, 1)}
	}
	t.Run("queues in order, once per edited module, and wakes Run", func(t *testing.T) {
		t.Parallel()
		n := newN(func(string) {}, nil)
		n.transition(Transition{Module: "a", Health: ModuleHealth{Status: Progressing}})
		n.edit("a")
		n.edit("b")
		n.edit("a")
		n.transition(Transition{Module: "a", Health: ModuleHealth{Status: Healthy}})
		select {
		case <-n.wake:
		default:
			t.Fatal("Run not woken")
		}
		trs, edited := n.drain()
		if len(trs) != 2 || trs[0].Health.Status != Progressing || trs[1].Health.Status != Healthy {
			t.Fatalf("transitions %+v", trs)
		}
		if !slices.Equal(edited, []string{"a", "b"}) {
			t.Fatalf("edited %v, want [a b]", edited)
		}
		if trs, edited := n.drain(); trs != nil || edited != nil {
			t.Fatalf("a second drain: %v, %v", trs, edited)
		}
	})
	t.Run("no edit listener: nothing queued", func(t *testing.T) {
		t.Parallel()
		n := newN(nil, nil)
		n.edit("a")
		if _, edited := n.drain(); edited != nil {
			t.Fatalf("edited %v", edited)
		}
		select {
		case <-n.wake:
			t.Fatal("woken for nothing")
		default:
		}
	})
	t.Run("a listener that panics does not stop the others", func(t *testing.T) {
		t.Parallel()
		var told []string
		n := newN(func(m string) {
			if m == "bad" {
				panic("listener")
			}
			told = append(told, m)
		}, func(Transition) { panic("listener") })
		n.tell(Transition{Module: "a"})
		n.tellEdited([]string{"a", "bad", "b"})
		if !slices.Equal(told, []string{"a", "b"}) {
			t.Fatalf("told %v, want [a b]", told)
		}
	})
}

func TestWatchSet(t *testing.T) {
	t.Parallel()
	ws := watchSet{keys: map[watchKey]*watch{}}
	obj := func(kind, ns, name string) *object {
		return &object{ref: kube.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name}}
	}
	a, b, c := obj("ConfigMap", "ns", "a"), obj("ConfigMap", "ns", "b"), obj("Secret", "ns", "a")
	a.w, b.w, c.w = ws.attach(a), ws.attach(b), ws.attach(c)
	if a.w != b.w || a.w == c.w || len(ws.keys) != 2 {
		t.Fatalf("one watch per kind and namespace: %d watches", len(ws.keys))
	}
	mon := &fakeMonitor{}
	a.w.mon = mon
	if got := ws.detach(a); got != nil {
		t.Fatalf("detach of one of two objects returned %v", got)
	}
	if got := ws.detach(b); got != Monitor(mon) || !b.w.stopped || len(ws.keys) != 1 {
		t.Fatalf("detach of the last object: %v, stopped %v, %d watches", got, b.w.stopped, len(ws.keys))
	}
	// a stopped watch still in the set (its monitor stopping) is not reused
	stopped := &watch{key: a.w.key, byName: map[string][]*object{}, stopped: true}
	ws.keys[a.w.key] = stopped
	d := obj("ConfigMap", "ns", "d")
	if d.w = ws.attach(d); d.w == stopped || d.w.stopped || ws.keys[a.w.key] != d.w {
		t.Fatal("an object joined a stopped watch")
	}
	if got := ws.detach(&object{}); got != nil {
		t.Fatalf("detach of an object without a watch: %v", got)
	}
}

func TestProgressTimeout(t *testing.T) {
	t.Parallel()
	const def = 5 * time.Minute
	tests := []struct {
		annotations map[string]string
		want        time.Duration
	}{
		{nil, def},
		{map[string]string{TimeoutAnnotation: "90s"}, 90 * time.Second},
		{map[string]string{TimeoutAnnotation: "soon"}, def},
		{map[string]string{TimeoutAnnotation: "-1s"}, def},
		{map[string]string{TimeoutAnnotation: "0s"}, def},
	}
	for _, tt := range tests {
		if got := progressTimeout("m", tt.annotations, def, slog.New(slog.DiscardHandler)); got != tt.want {
			t.Errorf("%v: %s, want %s", tt.annotations, got, tt.want)
		}
	}
}
