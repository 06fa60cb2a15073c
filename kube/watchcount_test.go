package kube

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// watchCounter counts the watch requests a client sends (and those whose
// response is still open), by URL, to see how many watches the API server
// serves for a Watcher.
type watchCounter struct {
	mu     sync.Mutex
	opened map[string]int // by path?query, ever sent
	open   map[string]int // not closed yet
}

// newCountingWatcher is a Watcher whose watch requests c counts.
func newCountingWatcher(tb testing.TB) (*Watcher, *watchCounter) {
	tb.Helper()
	c := &watchCounter{opened: map[string]int{}, open: map[string]int{}}
	cfg := rest.CopyConfig(restCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Query().Get("watch") != "true" {
				return rt.RoundTrip(req)
			}
			url := req.URL.Path + "?" + req.URL.RawQuery
			c.mu.Lock()
			c.opened[url]++
			c.open[url]++
			c.mu.Unlock()
			resp, err := rt.RoundTrip(req)
			if err != nil {
				c.closed(url)
				return nil, err
			}
			resp.Body = &countedBody{ReadCloser: resp.Body, done: func() { c.closed(url) }}
			return resp, nil
		})
	})
	w, err := NewWatcher(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return w, c
}

func (c *watchCounter) closed(url string) {
	c.mu.Lock()
	c.open[url]--
	c.mu.Unlock()
}

// count sums the requests of m whose URL contains every one of parts.
func (c *watchCounter) count(m map[string]int, parts ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for url, k := range m {
		if containsAll(url, parts) {
			n += k
		}
	}
	return n
}

// Opened is how many watch requests matching parts were sent.
func (c *watchCounter) Opened(parts ...string) int { return c.count(c.opened, parts...) }

// Open is how many of them are still open.
func (c *watchCounter) Open(parts ...string) int { return c.count(c.open, parts...) }

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// countedBody calls done once, when the watch's response is closed.
type countedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *countedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

// A first list that keeps failing with a retriable error (the API server
// answers 503) ends Start after SyncTimeout, with an error, and the
// monitor stops: the task that started it can fail and be retried.
func TestMonitorSyncTimeout(t *testing.T) {
	t.Parallel()
	cfg := rest.CopyConfig(restCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/configmaps") {
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`)), Request: req}, nil
			}
			return rt.RoundTrip(req)
		})
	})
	w, err := NewWatcher(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := w.NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{"default"}, SyncTimeout: 300 * time.Millisecond}, func(ObjectEvent) {})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Start(t.Context()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not synced") {
			t.Fatalf("Start = %v, want a not-synced error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waits for a list that keeps failing")
	}
	if len(w.Watches()) != 0 {
		t.Fatalf("the watch outlived its only monitor: %+v", w.Watches())
	}
}
