package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/webview"
)

// httpServer is the server on the listen address: the operator's endpoints
// (behind /readyz's start-up wait and the standby's answers), pprof when
// enabled, and POST /hooks/git when a webhook secret is set. ctx bounds the
// webhook relay of a standby.
func (s *startup) httpServer(ctx context.Context) (*http.Server, error) {
	src, leader := s.src, s.leader
	extra := func() map[string]any {
		parts := map[string]any{}
		if src != nil {
			parts["source"] = s.sourceView()
		}
		if leader != nil {
			parts["leaderElection"] = leader.Status()
		}
		return parts
	}
	mux := http.NewServeMux()
	api := s.waiting.handler(standby(leader, s.operator.Handler(lifecycle.HTTPOptions{Extra: extra, Namespace: s.op.Namespace})))
	mux.Handle("/", api)
	// the web view asks api for /status and the diff with each client's
	// request: its redaction and /debug's guard apply (docs/operator.md,
	// "Web view")
	view := webview.New(webview.Options{API: api, Guard: lifecycle.LocalOnly, Weights: func() map[string]int { return lifecycle.ModuleWeights(s.operator) }, Logger: s.logger})
	mux.Handle(webview.Prefix, view.Handler())
	mux.Handle("GET /{$}", webview.Redirect())
	if s.op.Pprof {
		mux.Handle("/debug/pprof/", lifecycle.LocalOnly(http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/profile", lifecycle.LocalOnly(http.HandlerFunc(pprof.Profile)))
		// an execution trace: where a module run waits (hooks, API round
		// trips), which a CPU profile does not show (docs/performance.md)
		mux.Handle("/debug/pprof/trace", lifecycle.LocalOnly(http.HandlerFunc(pprof.Trace)))
	}
	if src != nil && s.gt.WebhookSecret != "" {
		trigger := src.syncer.Trigger
		if leader != nil {
			// a standby relays to the leader through the source ConfigMap, at
			// most one write a second however many webhooks arrive
			relay := gitsync.Coalesce(ctx, time.Second, func(ctx context.Context) { relayWebhook(ctx, s.sourceCM, s.logger) })
			trigger = func() {
				src.syncer.Trigger()
				if !leader.Leading() {
					relay()
				}
			}
		}
		hook, err := gitsync.NewWebhook(s.gt.WebhookSecret, trigger, gitsync.WebhookLogger(s.logger))
		if err != nil {
			return nil, err
		}
		mux.Handle("/hooks/git", hook)
	}
	// WriteTimeout leaves room for /debug/pprof/profile's and trace's 30 s
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}, nil
}

// serveHTTP serves on ln in g until ctx ends, then shuts the server down.
func serveHTTP(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener) {
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	})
}

// waitingFor is what start-up waits for, answered on /readyz until it is
// done ("" once the operator runs).
type waitingFor struct{ what atomic.Pointer[string] }

func (w *waitingFor) set(what string) { w.what.Store(&what) }

func (w *waitingFor) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if p := w.what.Load(); r.URL.Path == "/readyz" && (p == nil || *p != "") {
			what := "start-up"
			if p != nil {
				what = *p
			}
			http.Error(rw, "waiting for "+what, http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// standby answers /readyz with 200 while this process stands by for the
// Lease: a standby is ready to take over, and a rolling update must not wait
// for the new pod to lead while the old one holds the Lease. /queue and
// /debug/ say why there are no queues nor modules.
func standby(leader *kube.Leader, next http.Handler) http.Handler {
	if leader == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if leader.Leading() {
			next.ServeHTTP(w, r)
			return
		}
		switch r.URL.Path {
		case "/readyz":
			_, _ = w.Write([]byte("standby: another replica holds the leader Lease\n"))
		case "/queue":
			http.Error(w, "standby: no queues run until this replica holds the leader Lease", http.StatusServiceUnavailable)
		default:
			if strings.HasPrefix(r.URL.Path, "/debug/") {
				http.Error(w, "standby: no modules run until this replica holds the leader Lease; ask the leader", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		}
	})
}
