package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addon-operator/loader"
)

// source is a monitor's membership in one shared watch.
type source struct {
	w  *Watcher
	sw *sharedWatch
	mb *member
}

// close leaves the watch (with report, telling the member its objects as
// Deleted) and releases it.
func (s *source) close(report bool) {
	s.sw.leave(s.mb, report)
	s.w.release(s.sw)
}

// open joins the watches the monitor needs (for as long as ctx lives) and
// waits for their first lists while waitCtx lives.
func (m *Monitor) open(ctx, waitCtx context.Context) error {
	if m.nsSelector != nil {
		ns := m.join(ctx, watchKey{gvr: namespacesGVR, labelSelector: *m.nsSelector}, "Namespace", &member{
			name: m.name, names: m.spec.Namespaces, on: m.followNamespace, onError: m.lastErr.set, ready: make(chan error, 1),
		})
		m.mu.Lock()
		stopped := m.stopped
		if !stopped {
			m.nsSource = ns
		}
		m.mu.Unlock()
		if stopped {
			ns.close(false)
		}
		if err := wait(waitCtx, ns.mb.ready); err != nil {
			return fmt.Errorf("watch namespaces for %s: %w", m.kind, err)
		}
	} else {
		namespaces := m.spec.Namespaces
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		}
		for _, ns := range namespaces {
			m.addSource(ns)
		}
	}
	m.mu.Lock()
	var waits []chan error
	for _, s := range m.sources {
		waits = append(waits, s.mb.ready)
	}
	m.mu.Unlock()
	for _, ready := range waits {
		if err := wait(waitCtx, ready); err != nil {
			return fmt.Errorf("watch %s: %w", m.kind, err)
		}
	}
	return nil
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// join joins the shared watch for key.
func (m *Monitor) join(ctx context.Context, key watchKey, kind string, mb *member) *source {
	sw := m.w.watch(ctx, key, kind)
	sw.join(mb)
	return &source{w: m.w, sw: sw, mb: mb}
}

// addSource starts watching the objects of one namespace ("" for all).
func (m *Monitor) addSource(ns string) {
	m.mu.Lock()
	_, dup := m.sources[ns]
	stopped, ctx := m.stopped, m.ctx
	m.mu.Unlock()
	if dup || stopped {
		return
	}
	key := watchKey{gvr: m.gvr, namespace: ns, labelSelector: m.labelSelector, fieldSelector: m.fieldSelector}
	s := m.join(ctx, key, m.kind, m.member())
	m.mu.Lock()
	stopped = m.stopped
	if !stopped {
		m.sources[ns] = s
	}
	m.mu.Unlock()
	if stopped {
		s.close(false)
	}
}

// member is the monitor's part of a watch of the objects it watches.
func (m *Monitor) member() *member {
	return &member{
		name: m.name, jq: m.spec.JqFilter, summarize: m.spec.Summarize, onFilter: m.spec.OnFilter, keep: m.spec.KeepFullObjects, names: m.spec.Names,
		on: m.observe, onError: m.lastErr.set, ready: make(chan error, 1),
	}
}

// removeSource stops watching a namespace that left the selection; its
// objects are reported as Deleted, since the binding no longer sees them.
func (m *Monitor) removeSource(ns string) {
	m.mu.Lock()
	s := m.sources[ns]
	delete(m.sources, ns)
	m.mu.Unlock()
	if s != nil {
		s.close(true)
	}
}

// followNamespace starts or stops a source for a namespace that entered or
// left the namespace label selector's selection.
func (m *Monitor) followNamespace(c change) {
	if c.typ == loader.EventDeleted {
		m.removeSource(c.rec.name)
	} else {
		m.addSource(c.rec.name)
	}
}
