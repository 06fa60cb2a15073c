package webview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Options are what a View reads.
type Options struct {
	// API is the operator's HTTP API (statusapi's handler, as cmd serves
	// it): the pages ask it for /status, and a module's diff page for
	// /debug/modules/NAME/diff, with the client's own request, so that
	// its redaction and its guard apply to what the pages show. Required.
	API http.Handler
	// Guard admits the clients that may see a module's live diff: /debug's
	// guard, statusapi.LocalOnly. Required: without it no diff is linked
	// or served.
	Guard func(http.Handler) http.Handler
	// Weights, if set, are the running tree's modules' weights by name;
	// the modules are listed by weight either way (/status's order).
	Weights func() map[string]int
	// Poll is how often a page refreshes in place (default 2s).
	Poll time.Duration
	// Logger logs failed answers of the API (default slog.Default()).
	Logger *slog.Logger
}

// View serves the web view under /ui/.
type View struct {
	opts Options
}

// New prepares a View.
func New(opts Options) *View {
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &View{opts: opts}
}

// Prefix is where the view is served.
const Prefix = "/ui/"

// Handler serves the pages under /ui/ and their assets; GET only.
func (v *View) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/{$}", v.page("modules", v.modulesPage))
	mux.HandleFunc("GET /ui/modules/{name}", v.page("module", v.modulePage))
	mux.HandleFunc("GET /ui/revision", v.page("revision", v.revisionPage))
	mux.HandleFunc("GET /ui/queues", v.page("queues", v.queuesPage))
	// the diff may show what a hand edit put in a ConfigMap: guarded as
	// /debug/ (docs/security.md, "Who sees what"), and asked of the API
	// through /debug's own guard too
	mux.Handle("GET /ui/modules/{name}/diff", v.guard(http.HandlerFunc(v.page("diff", v.diffPage))))
	mux.Handle("GET /ui/assets/", assetHandler())
	return securityHeaders(mux)
}

// guard is Options.Guard, or refusing everyone without one.
func (v *View) guard(next http.Handler) http.Handler {
	if v.opts.Guard == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the diff is not served here", http.StatusForbidden)
		})
	}
	return v.opts.Guard(next)
}

// admitted says whether the guard lets r's client through, asking it with
// a handler that only notes it was reached: the guard's rules stay in one
// place (statusapi.LocalOnly).
func (v *View) admitted(r *http.Request) bool {
	reached := false
	v.guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(&recorder{header: http.Header{}}, r)
	return reached
}

// ask serves GET path (escaped) from the API with r's addresses and
// context: the guard judges the client, not this process.
func (v *View) ask(r *http.Request, path string) (int, []byte) {
	u, err := url.Parse(path)
	if err != nil {
		return http.StatusBadRequest, []byte(err.Error())
	}
	sub := r.Clone(r.Context())
	sub.Method, sub.Body, sub.ContentLength = http.MethodGet, http.NoBody, 0
	sub.URL.Path, sub.URL.RawPath, sub.URL.RawQuery, sub.RequestURI = u.Path, u.RawPath, "", path
	sub.Header = http.Header{}
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	v.opts.API.ServeHTTP(rec, sub)
	return rec.code, rec.body.Bytes()
}

// status asks the API for /status.
func (v *View) status(r *http.Request) (*status, error) {
	code, body := v.ask(r, "/status")
	if code != http.StatusOK {
		return nil, fmt.Errorf("/status answered %d: %s", code, firstLine(string(body)))
	}
	st := &status{}
	if err := json.Unmarshal(body, st); err != nil {
		return nil, fmt.Errorf("/status: %w", err)
	}
	var weights map[string]int
	if v.opts.Weights != nil {
		weights = v.opts.Weights()
	}
	for i := range st.Modules {
		st.Modules[i].Weight = -1
		if w, ok := weights[st.Modules[i].Name]; ok {
			st.Modules[i].Weight = w
		}
	}
	// by weight, as the tree runs them; stable keeps /status's (the
	// tree's) order within a weight and for modules without a known one
	slices.SortStableFunc(st.Modules, func(a, b module) int {
		if a.Weight < 0 || b.Weight < 0 || a.Weight == b.Weight {
			return 0
		}
		return a.Weight - b.Weight
	})
	return st, nil
}

// page serves one page: fill builds its data from /status; with
// ?part=main only the refreshed part is written (live.js), with an ETag
// so an unchanged page costs a 304.
func (v *View) page(name string, fill func(r *http.Request, st *status) (any, int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := name // this answer's: an error page does not stay
		st, err := v.status(r)
		code := http.StatusOK
		var data any
		if err != nil {
			v.opts.Logger.Warn("web view: the status is unavailable", "error", err)
			st, code = &status{}, http.StatusServiceUnavailable
			data = errorPage{Message: err.Error()}
			name = "error"
		} else {
			data, code = fill(r, st)
			if e, ok := data.(errorPage); ok && code != http.StatusOK {
				data, name = e, "error"
			}
		}
		p := pageData{Page: name, Status: st, Data: data, Poll: v.opts.Poll.Milliseconds(), Path: r.URL.Path}
		tmpl := "layout"
		if r.URL.Query().Get("part") == "main" {
			tmpl = "main"
		}
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, tmpl, p); err != nil {
			v.opts.Logger.Error("web view: rendering failed", "page", name, "error", err)
			http.Error(w, "rendering failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if tmpl == "main" {
			tag := etag(buf.Bytes())
			w.Header().Set("ETag", tag)
			if code == http.StatusOK && r.Header.Get("If-None-Match") == tag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.WriteHeader(code)
		_, _ = w.Write(buf.Bytes())
	}
}

// securityHeaders: no script, style or connection but the view's own
// (an injected tag would not run even if escaping failed), no framing, no
// referrer with the page's path.
func securityHeaders(next http.Handler) http.Handler {
	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// Redirect sends / to the view (cmd registers it on "/" exactly).
func Redirect() http.Handler { return http.RedirectHandler(Prefix, http.StatusFound) }

// recorder keeps an in-process answer of the API.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
