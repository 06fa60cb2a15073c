package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kind is the kind of an admission webhook.
type Kind string

const (
	Validating Kind = "validating"
	Mutating   Kind = "mutating"
)

// Paths of the webhooks: /validating/NAME, /mutating/NAME and
// /conversion/CRD, NAME being the binding's name.
const (
	pathValidating = "/validating/"
	pathMutating   = "/mutating/"
	pathConversion = "/conversion/"
)

// Limits of a request (docs/security.md, "Limits").
const (
	// DefaultMaxRequestBytes bounds a request body: an AdmissionReview
	// carries the object and the old object (each at most the API server's
	// 3 MiB request limit), a ConversionReview a list's objects.
	DefaultMaxRequestBytes = 16 << 20
	// DefaultConcurrency bounds the requests one webhook answers at once;
	// more wait for a turn within their timeout.
	DefaultConcurrency = 8
	// defaultTimeout bounds a request whose URL carries no timeout.
	defaultTimeout = 10 * time.Second
	maxTimeout     = 30 * time.Second
)

// AdmissionResult is a hook's answer to an admission request.
type AdmissionResult struct {
	Allowed  bool
	Message  string
	Warnings []string
	// Patch is a JSON patch of the object (mutating webhooks only).
	Patch []byte
}

// Reviewer answers webhook requests by running the bound hooks.
type Reviewer interface {
	// Routes says whether a request for the named webhook (a CRD for a
	// conversion) has somewhere to go; a path it does not route is refused
	// before its body is read.
	Routes(kind Kind, name string) bool
	// Admit answers an admission request for the named webhook. An error
	// fails the call, so the API server applies the webhook's
	// failurePolicy.
	Admit(ctx context.Context, kind Kind, name string, review *admissionv1.AdmissionReview) (AdmissionResult, error)
	// Convert converts the request's objects of the named CRD to its
	// desiredAPIVersion; an error is the failure the API server reports.
	Convert(ctx context.Context, crd string, review *apiextv1.ConversionReview) ([]runtime.RawExtension, error)
}

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	Reviewer Reviewer
	Logger   *slog.Logger
	// MaxRequestBytes bounds a request body (default DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// Concurrency bounds the parallel requests of one webhook (default
	// DefaultConcurrency).
	Concurrency int
	// MaxInFlightBytes bounds the bodies held at once, all webhooks
	// together (default DefaultMaxInFlightBytes).
	MaxInFlightBytes int64
}

// NewHandler routes webhook requests by path to the Reviewer.
func NewHandler(o HandlerOptions) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	h := &handler{opts: o, slots: &slots{n: o.Concurrency, by: map[string]*slot{}}, bytes: newBudget(o.MaxInFlightBytes)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST "+pathValidating+"{name}", func(w http.ResponseWriter, r *http.Request) { h.admit(w, r, Validating) })
	mux.HandleFunc("POST "+pathMutating+"{name}", func(w http.ResponseWriter, r *http.Request) { h.admit(w, r, Mutating) })
	mux.HandleFunc("POST "+pathConversion+"{crd}", h.convert)
	return mux
}

type handler struct {
	opts  HandlerOptions
	slots *slots  // by webhook: its running requests
	bytes *budget // bodies held, all webhooks together
}

// requestContext bounds a request by the timeout the API server put in
// its URL (?timeout=10s), at most 30 s.
func requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	d := defaultTimeout
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		d = min(t, maxTimeout)
	}
	return context.WithTimeout(r.Context(), d)
}

// begin admits a request for a webhook the Reviewer routes (404 for any
// other path, unread), then, before its body is read, takes one of the
// webhook's turns and its body's share of the bytes in flight, each within
// the request's timeout (503 past it, unread). done releases them once the
// answer is written; ok false: the answer is written already.
func (h *handler) begin(w http.ResponseWriter, r *http.Request, kind Kind, name string) (ctx context.Context, done func(), ok bool) {
	if !h.opts.Reviewer.Routes(kind, name) {
		// no state, and a bounded name: any client may send any path
		h.opts.Logger.Warn("webhook request refused: no such webhook", "kind", string(kind), "webhook", short(name))
		http.Error(w, fmt.Sprintf("no %s webhook %s here", kind, short(name)), http.StatusNotFound)
		return nil, nil, false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "want Content-Type application/json", http.StatusUnsupportedMediaType)
		return nil, nil, false
	}
	if r.ContentLength > h.opts.MaxRequestBytes {
		h.tooLarge(w, name)
		return nil, nil, false
	}
	ctx, cancel := requestContext(r)
	release, err := h.slots.acquire(ctx, RegisteredKey(kind, name))
	if err != nil {
		cancel()
		h.opts.Logger.Warn("webhook request not answered", "kind", string(kind), "webhook", name, "error", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return nil, nil, false
	}
	// a body of unknown length may be as long as the limit
	n := r.ContentLength
	if n < 0 {
		n = h.opts.MaxRequestBytes
	}
	give, err := h.bytes.take(ctx, n)
	if err != nil {
		release()
		cancel()
		h.opts.Logger.Warn("webhook request not answered", "kind", string(kind), "webhook", name, "error", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return nil, nil, false
	}
	return ctx, func() { give(); release(); cancel() }, true
}

func (h *handler) tooLarge(w http.ResponseWriter, name string) {
	h.opts.Logger.Warn("webhook request refused: body over the limit", "webhook", name, "limit", h.opts.MaxRequestBytes)
	http.Error(w, fmt.Sprintf("request body over the limit of %d bytes", h.opts.MaxRequestBytes), http.StatusRequestEntityTooLarge)
}

// decode reads a JSON body of at most MaxRequestBytes into v: into one
// buffer, of the declared length or, for a body of unknown length
// (chunked), of the limit and a byte (the budget reserved the limit for
// it), dropped once decoded. io.ReadAll would grow its buffer by copies,
// ending past the limit with several times the body as garbage.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, name string, v any) bool {
	var b []byte
	var err error
	if r.ContentLength >= 0 {
		b = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, b)
	} else {
		// MaxBytesReader has the server close the connection past the
		// limit rather than read the rest
		b = make([]byte, h.opts.MaxRequestBytes+1)
		var n int
		n, err = io.ReadFull(http.MaxBytesReader(w, r.Body, h.opts.MaxRequestBytes), b)
		switch {
		case err == nil: // the limit and a byte more
			err = &http.MaxBytesError{Limit: h.opts.MaxRequestBytes}
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF): // the whole body
			b, err = b[:n], nil
		}
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.tooLarge(w, name)
			return false
		}
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		http.Error(w, "not a review: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (h *handler) admit(w http.ResponseWriter, r *http.Request, kind Kind) {
	name := r.PathValue("name")
	ctx, done, ok := h.begin(w, r, kind, name)
	if !ok {
		return
	}
	defer done()
	var review admissionv1.AdmissionReview
	if !h.decode(w, r, name, &review) {
		return
	}
	if review.Request == nil {
		http.Error(w, "AdmissionReview without a request", http.StatusBadRequest)
		return
	}
	logger := h.opts.Logger.With("webhook", name, "kind", string(kind), "uid", short(string(review.Request.UID)))
	res, err := h.opts.Reviewer.Admit(ctx, kind, name, &review)
	if err != nil {
		// a failed call, not a denial: the webhook's failurePolicy decides
		logger.Warn("webhook hook failed", "error", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: res.Allowed, Warnings: res.Warnings}
	if !res.Allowed {
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: res.Message}
	}
	if kind == Mutating && len(res.Patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = res.Patch, &pt
	}
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	writeJSON(w, out)
}

func (h *handler) convert(w http.ResponseWriter, r *http.Request) {
	crd := r.PathValue("crd")
	ctx, done, ok := h.begin(w, r, Conversion, crd)
	if !ok {
		return
	}
	defer done()
	var review apiextv1.ConversionReview
	if !h.decode(w, r, crd, &review) {
		return
	}
	if review.Request == nil {
		http.Error(w, "ConversionReview without a request", http.StatusBadRequest)
		return
	}
	logger := h.opts.Logger.With("crd", crd, "uid", short(string(review.Request.UID)))
	resp := &apiextv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	var err error
	resp.ConvertedObjects, err = h.opts.Reviewer.Convert(ctx, crd, &review)
	if err != nil {
		logger.Warn("conversion failed", "error", err)
		resp.ConvertedObjects = nil
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
	}
	out := apiextv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	}
	writeJSON(w, out)
}
