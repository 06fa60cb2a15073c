package statusapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/addonops/addon-operator/lifecycle/driftcheck"
)

// Handler serves /metrics, /metrics/hooks, /healthz, /readyz, /queue,
// /status and the debug endpoints under /debug/ (debug.go in this package).
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	shown := http.NewServeMux() // answers that may show values: redacted
	a.debugRoutes(shown)
	// a diff may show what a hand edit put in a ConfigMap: local only, as
	// /debug/ (docs/security.md, "Who sees what")
	shown.Handle("GET /debug/modules/{name}/diff", LocalOnly(http.HandlerFunc(a.serveDiff)))
	shown.HandleFunc("/status", a.serveStatus)
	shown.HandleFunc("/queue", a.serveQueue)
	redacted := Redacted(a.opts.Redactor, shown)
	mux.Handle("/debug/", redacted)
	mux.Handle("/status", redacted)
	mux.Handle("/queue", redacted)
	switch {
	case a.opts.Metrics != nil:
		mux.Handle("/metrics", a.opts.Metrics)
	case a.opts.Registry != nil:
		mux.Handle("/metrics", promhttp.HandlerFor(a.opts.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	if a.opts.HookRegistry != nil {
		// what hooks wrote to METRICS_PATH, apart from the operator's own
		mux.Handle("/metrics/hooks", promhttp.HandlerFor(a.opts.HookRegistry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.opts.Revisions.Ready() {
			http.Error(w, "not converged yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

func (a *API) serveQueue(w http.ResponseWriter, r *http.Request) {
	queues := a.opts.Queues.Get()
	if queues == nil {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	queues.Handler().ServeHTTP(w, r)
}

// serveStatus marshals Status beside Extra's fields, one JSON object with
// its keys sorted.
func (a *API) serveStatus(w http.ResponseWriter, _ *http.Request) {
	body := map[string]json.RawMessage{}
	if a.opts.Extra != nil {
		for k, v := range a.opts.Extra() {
			b, err := json.Marshal(v)
			if err != nil {
				http.Error(w, "status field "+k+": "+err.Error(), http.StatusInternalServerError)
				return
			}
			body[k] = b
		}
	}
	b, err := json.Marshal(a.Status())
	if err == nil {
		// into the same map: the status's own fields win
		err = json.Unmarshal(b, &body)
	}
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, body)
}

func (a *API) serveDiff(w http.ResponseWriter, r *http.Request) {
	if a.opts.Drift == nil {
		writeError(w, driftcheck.ErrNoDetector)
		return
	}
	diff, err := a.opts.Drift.Diff(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	_, _ = w.Write([]byte(diff))
}

// httpError is a request that cannot be answered, with its status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// codeOf maps an error to its status: driftcheck's refusals are 404, an
// httpError its own, anything else 500.
func codeOf(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.Is(err, driftcheck.ErrNoDetector), errors.Is(err, driftcheck.ErrUnknownModule), errors.Is(err, driftcheck.ErrNotDeployed):
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error) { http.Error(w, err.Error(), codeOf(err)) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// read by people and the CLI, never embedded in HTML: <redacted> as it is
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
