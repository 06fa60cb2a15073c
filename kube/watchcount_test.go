package kube

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

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
