package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addon-operator/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// blockingReviewer allows every request after release is closed.
type blockingReviewer struct {
	release chan struct{}
	running atomic.Int32
}

func (b *blockingReviewer) Admit(ctx context.Context, _ Kind, _ string, _ *admissionv1.AdmissionReview) (AdmissionResult, error) {
	b.running.Add(1)
	defer b.running.Add(-1)
	select {
	case <-b.release:
		return AdmissionResult{Allowed: true}, nil
	case <-ctx.Done():
		return AdmissionResult{}, ctx.Err()
	}
}

// Routes knows every webhook but those named unknown*.
func (b *blockingReviewer) Routes(_ Kind, name string) bool {
	return !strings.HasPrefix(name, "unknown")
}

func (b *blockingReviewer) Convert(context.Context, string, *apiextv1.ConversionReview) ([]runtime.RawExtension, error) {
	return nil, fmt.Errorf("no conversions")
}

type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.now.Load()) }
func (c *clock) add(d time.Duration) { c.now.Add(int64(d)) }
func pool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(b)
	return p
}

// serve runs s on a loopback port until the test ends and returns its address.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	s.Addr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	l, err := s.Listen(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = l.Serve(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return l.Addr().String()
}

func handshake(addr string, roots *x509.CertPool, certs ...tls.Certificate) error {
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, Certificates: certs})
	if err != nil {
		return err
	}
	defer conn.Close()
	// TLS 1.3 reports a refused client certificate on the first read
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	if err == nil {
		_, err = conn.Read(make([]byte, 16))
	}
	return err
}

// A rotated Secret reaches the server: the new certificate is served once
// its files change, and a half-written pair keeps the last good one.
func TestServerReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca1, cert, key, err := testenv.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	roots1 := pool(t, ca1)
	clk := &clock{}
	clk.now.Store(time.Now().UnixNano())
	addr := serve(t, &Server{CertFile: cert, KeyFile: key, Handler: http.NotFoundHandler(), Logger: quiet, Now: clk.Now})
	if err := handshake(addr, roots1); err != nil {
		t.Fatalf("first certificate: %v", err)
	}
	other := t.TempDir()
	ca2, cert2, key2, err := testenv.ServingCert(other)
	if err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{cert2: cert, key2: key} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(2 * certReloadEvery)
	if err := handshake(addr, pool(t, ca2)); err != nil {
		t.Fatalf("rotated certificate: %v", err)
	}
	if err := handshake(addr, roots1); err == nil {
		t.Fatal("the old certificate is still served")
	}
	// a half-written pair: the last good certificate stays
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.add(2 * certReloadEvery)
	if err := handshake(addr, pool(t, ca2)); err != nil {
		t.Fatalf("after a bad write: %v", err)
	}
}

// With a client CA, a client without a certificate signed by it is refused.
func TestServerRequiresClientCertificate(t *testing.T) {
	ca, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clientCA, _, _, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, &Server{CertFile: cert, KeyFile: key, ClientCAFiles: []string{clientCA}, Handler: NewHandler(HandlerOptions{Reviewer: &blockingReviewer{}, Logger: quiet}), Logger: quiet})
	if err := handshake(addr, pool(t, ca)); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	noClientCA := serve(t, &Server{CertFile: cert, KeyFile: key, Handler: http.NotFoundHandler(), Logger: quiet})
	if err := handshake(noClientCA, pool(t, ca)); err != nil {
		t.Fatalf("without a client CA: %v", err)
	}
}

func review(t *testing.T, uid string) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{UID: types.UID("u-" + uid)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hostile requests are bounded: a body over the limit is refused unread,
// and one webhook answers at most Concurrency requests at once; the rest
// wait within their timeout, then fail (the webhook's failurePolicy
// decides).
func TestHandlerLimits(t *testing.T) {
	ca, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rv := &blockingReviewer{release: make(chan struct{})}
	addr := serve(t, &Server{CertFile: cert, KeyFile: key, Logger: quiet,
		Handler: NewHandler(HandlerOptions{Reviewer: rv, Logger: quiet, MaxRequestBytes: 1024, Concurrency: 2})})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(t, ca)}}}
	post := func(path string, body []byte) (int, string) {
		return postBody(t, hc, addr, path, bytes.NewReader(body))
	}
	// a reader of unknown length: sent chunked
	postChunked := func(path string, body []byte) (int, string) {
		return postBody(t, hc, addr, path, struct{ io.Reader }{bytes.NewReader(body)})
	}
	tests := []struct {
		name, path string
		body       []byte
		chunked    bool
		want       int
	}{
		{"over the body limit", "/validating/a.example.com", bytes.Repeat([]byte(" "), 2048), false, http.StatusRequestEntityTooLarge},
		{"chunked, over the body limit", "/validating/a.example.com", bytes.Repeat([]byte(" "), 2048), true, http.StatusRequestEntityTooLarge},
		{"chunked, a byte over the body limit", "/validating/a.example.com", bytes.Repeat([]byte(" "), 1025), true, http.StatusRequestEntityTooLarge},
		// read whole, then refused as no JSON
		{"chunked, at the body limit", "/validating/a.example.com", bytes.Repeat([]byte(" "), 1024), true, http.StatusBadRequest},
		{"not JSON", "/validating/a.example.com", []byte("{"), false, http.StatusBadRequest},
		{"no request", "/validating/a.example.com", []byte("{}"), false, http.StatusBadRequest},
		{"unknown path", "/elsewhere", review(t, "x"), false, http.StatusNotFound},
		{"unknown webhook", "/validating/unknown.example.com", review(t, "x"), false, http.StatusNotFound},
		{"unknown conversion", "/conversion/unknown.example.com", review(t, "x"), false, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := post
			if tt.chunked {
				send = postChunked
			}
			if code, body := send(tt.path, tt.body); code != tt.want {
				t.Fatalf("status %d (%s), want %d", code, body, tt.want)
			}
		})
	}

	// two requests hold the webhook's slots; a third times out waiting
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { post("/validating/a.example.com?timeout=10s", review(t, fmt.Sprint(i))) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for rv.running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := post("/validating/a.example.com?timeout=300ms", review(t, "third")); code != http.StatusServiceUnavailable {
		t.Fatalf("third request: %d %s", code, body)
	}
	// another webhook has slots of its own
	if rv.running.Load() != 2 {
		t.Fatalf("%d running", rv.running.Load())
	}
	close(rv.release)
	wg.Wait()
	for name, send := range map[string]func(string, []byte) (int, string){"after": post, "after, chunked": postChunked} {
		code, body := send("/validating/b.example.com", review(t, name))
		var out admissionv1.AdmissionReview
		if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.Response == nil || !out.Response.Allowed || out.Response.UID != types.UID("u-"+name) {
			t.Fatalf("%s: %d %s", name, code, body)
		}
	}
}

func postBody(t *testing.T, hc *http.Client, addr, path string, body io.Reader) (int, string) {
	t.Helper()
	resp, err := hc.Post("https://"+addr+path, "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
