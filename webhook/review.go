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
	"sync"
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
	h := &handler{opts: o, slots: map[string]chan struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST "+pathValidating+"{name}", func(w http.ResponseWriter, r *http.Request) { h.admit(w, r, Validating) })
	mux.HandleFunc("POST "+pathMutating+"{name}", func(w http.ResponseWriter, r *http.Request) { h.admit(w, r, Mutating) })
	mux.HandleFunc("POST "+pathConversion+"{crd}", h.convert)
	return mux
}

type handler struct {
	opts  HandlerOptions
	mu    sync.Mutex
	slots map[string]chan struct{} // by path: the webhook's running requests
}

// acquire takes one of the webhook's slots, waiting until ctx ends.
func (h *handler) acquire(ctx context.Context, path string) (func(), error) {
	h.mu.Lock()
	s, ok := h.slots[path]
	if !ok {
		s = make(chan struct{}, h.opts.Concurrency)
		h.slots[path] = s
	}
	h.mu.Unlock()
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%d requests of this webhook are running already: %w", h.opts.Concurrency, ctx.Err())
	}
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

// decode reads a JSON body of at most MaxRequestBytes into v.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "want Content-Type application/json", http.StatusUnsupportedMediaType)
		return false
	}
	body := http.MaxBytesReader(w, r.Body, h.opts.MaxRequestBytes)
	b, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.opts.Logger.Warn("webhook request refused: body over the limit", "path", r.URL.Path, "limit", h.opts.MaxRequestBytes)
			http.Error(w, fmt.Sprintf("request body over the limit of %d bytes", h.opts.MaxRequestBytes), http.StatusRequestEntityTooLarge)
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
	var review admissionv1.AdmissionReview
	if !h.decode(w, r, &review) {
		return
	}
	if review.Request == nil {
		http.Error(w, "AdmissionReview without a request", http.StatusBadRequest)
		return
	}
	logger := h.opts.Logger.With("webhook", name, "kind", string(kind), "uid", string(review.Request.UID))
	ctx, cancel := requestContext(r)
	defer cancel()
	release, err := h.acquire(ctx, r.URL.Path)
	if err != nil {
		logger.Warn("webhook request not answered", "error", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
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
	var review apiextv1.ConversionReview
	if !h.decode(w, r, &review) {
		return
	}
	if review.Request == nil {
		http.Error(w, "ConversionReview without a request", http.StatusBadRequest)
		return
	}
	logger := h.opts.Logger.With("crd", crd, "uid", string(review.Request.UID))
	ctx, cancel := requestContext(r)
	defer cancel()
	resp := &apiextv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	release, err := h.acquire(ctx, r.URL.Path)
	if err == nil {
		resp.ConvertedObjects, err = h.opts.Reviewer.Convert(ctx, crd, &review)
		release()
	}
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
