package webhook

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/addonops/addon-operator/internal/testenv"
)

// countingWriter counts what is logged.
type countingWriter struct {
	n       atomic.Int64
	longest atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	for l := c.longest.Load(); int64(len(p)) > l && !c.longest.CompareAndSwap(l, int64(len(p))); l = c.longest.Load() {
	}
	return len(p), nil
}

// heapBytes is the heap's objects, live or not yet swept, read without
// stopping the world.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocBytes is the bytes allocated on the heap since the process started.
func allocBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap samples the heap until stop is called, which returns its peak.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if h := heapBytes(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// TestHostileClients: whoever reaches the port (no client CA) cannot make
// the server hold much. Concurrent 15 MiB reviews, with a Content-Length or
// chunked, are read a 64 MiB budget at a time, the rest wait unread and get
// 503 when their timeout ends; 300 requests with unique ~900 KB paths are
// refused at their request line, leaving no state and short log lines.
func TestHostileClients(t *testing.T) {
	_, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// as the binary runs (cmd's setUp): the heap grows by half before a GC
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	var logged countingWriter
	rv := &blockingReviewer{release: make(chan struct{})}
	var running, maxRunning, admitted atomic.Int32
	counting := reviewerFunc{blockingReviewer: rv, onAdmit: func(delta int32) {
		if delta > 0 {
			admitted.Add(1)
		}
		n := running.Add(delta)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
	}}
	addr := serve(t, &Server{CertFile: cert, KeyFile: key, Logger: quiet,
		Handler: NewHandler(HandlerOptions{Reviewer: counting, Logger: slog.New(slog.NewTextHandler(&logged, nil))})})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	t.Cleanup(hc.CloseIdleConnections)

	// one body shared by every request, so the client side holds 15 MiB
	const size = 15 << 20
	var body bytes.Buffer
	body.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"data":{"x":"`)
	body.WriteString(strings.Repeat("A", size))
	body.WriteString(`"}}}}`)
	raw := body.Bytes()

	for _, tc := range []struct {
		name string
		n    int
		// chunked sends the body without a Content-Length: the server
		// reserves the limit (16 MiB) for it and must read it into no more
		chunked bool
		// maxGrowth bounds the heap's peak growth: 64 MiB of bodies at a
		// time, each decoded once beside its buffer, and the GC's headroom
		maxGrowth int64
		// maxPerRead bounds what reading and decoding one body allocates:
		// its buffer and what the decoder makes of it (about 40 MiB)
		maxPerRead int64
	}{
		// reading all 40 at once held over 1 GiB
		{name: "content-length", n: 40, maxGrowth: 256 << 20, maxPerRead: 48 << 20},
		// read with io.ReadAll, a chunked body took about 90 MiB of
		// copies, the heap's peak growing by 160-180 MiB for 4 at a time
		{name: "chunked", n: 6, chunked: true, maxGrowth: 256 << 20, maxPerRead: 56 << 20},
	} {
		maxRunning.Store(0)
		runtime.GC()
		started := time.Now()
		base := heapBytes()
		allocs0 := allocBytes()
		admitted0 := admitted.Load()
		stop := peakHeap()
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range tc.n {
			wg.Go(func() {
				var r io.Reader = bytes.NewReader(raw)
				if tc.chunked {
					r = struct{ io.Reader }{r} // no length known: chunked
				}
				code := 0
				resp, err := hc.Post("https://"+addr+"/validating/big.example.com?timeout=2s", "application/json", r)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		peak := stop()
		grew := int64(peak) - int64(base)
		nread := admitted.Load() - admitted0
		perRead := int64(allocBytes()-allocs0) / max(int64(nread), 1)
		t.Logf("%s: %d × 15 MiB in %s: heap %d MiB at start, peak growth %d MiB, %d MiB allocated per body read (%d read), at most %d answered at once, status codes %v",
			tc.name, tc.n, time.Since(started).Round(time.Millisecond), base>>20, grew>>20, perRead>>20, nread, maxRunning.Load(), codes)
		if grew > tc.maxGrowth {
			t.Errorf("%s: the heap grew by %d MiB under %d concurrent 15 MiB requests, want under %d MiB", tc.name, grew>>20, tc.n, tc.maxGrowth>>20)
		}
		if nread == 0 {
			t.Errorf("%s: no body read", tc.name)
		} else if perRead > tc.maxPerRead {
			t.Errorf("%s: reading a 15 MiB body allocated %d MiB, want at most %d MiB", tc.name, perRead>>20, tc.maxPerRead>>20)
		}
		if m := maxRunning.Load(); m > DefaultMaxInFlightBytes/size {
			t.Errorf("%s: %d requests answered at once, want at most %d (the in-flight budget)", tc.name, m, DefaultMaxInFlightBytes/size)
		}
		// past the budget a request waits unread, then gets 503 (or, while
		// its client still writes the body, the connection closed)
		if codes[http.StatusServiceUnavailable]+codes[0] == 0 || codes[http.StatusOK] > 0 {
			t.Errorf("%s: status codes %v: want the requests over the budget refused", tc.name, codes)
		}
	}
	started := time.Now()
	var wg sync.WaitGroup

	// unknown paths: long ones refused at the request line, shorter ones
	// with a 404 before the body; no state is kept for either
	runtime.GC()
	base := heapBytes()
	logBase := logged.n.Load()
	long := bytes.Repeat([]byte("x"), 900<<10)
	reviewBody := review(t, "p")
	var next atomic.Int32
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= 300; i = next.Add(1) {
				// written by hand: the path shared, not parsed as a URL
				name := long
				if i%10 == 0 {
					name = long[:16<<10] // within the header limit: a 404
				}
				code := rawPost(t, addr, fmt.Sprintf("/validating/unknown-%d.", i), name, reviewBody)
				if code != 0 && code != http.StatusRequestHeaderFieldsTooLarge && code != http.StatusNotFound {
					t.Errorf("request %d: status %d", i, code)
				}
			}
		})
	}
	wg.Wait()
	hc.CloseIdleConnections()
	runtime.GC()
	kept := int64(heapBytes()) - int64(base)
	logs := logged.n.Load() - logBase
	t.Logf("peak RSS of the test process (client and server): %s", vmHWM())
	t.Logf("300 long paths in %s: heap kept %d KiB, %d bytes logged, longest line %d bytes", time.Since(started).Round(time.Millisecond), kept>>10, logs, logged.longest.Load())
	if kept > 16<<20 {
		t.Errorf("300 unknown paths kept %d MiB of heap", kept>>20)
	}
	if logs > 300<<10 || logged.longest.Load() > 2<<10 {
		t.Errorf("300 unknown paths logged %d bytes, the longest line %d bytes", logs, logged.longest.Load())
	}
}

// reviewerFunc counts the admissions a blockingReviewer runs.
type reviewerFunc struct {
	*blockingReviewer
	onAdmit func(delta int32)
}

func (r reviewerFunc) Admit(ctx context.Context, k Kind, name string, rv *admissionv1.AdmissionReview) (AdmissionResult, error) {
	r.onAdmit(1)
	defer r.onAdmit(-1)
	return r.blockingReviewer.Admit(ctx, k, name, rv)
}

// rawPost sends a request whose path is prefix+name over its own
// connection and returns the status code (0 when the server closed the
// connection first).
func rawPost(t *testing.T, addr, prefix string, name, body []byte) int {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Error(err)
		return 0
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	head := fmt.Sprintf("POST %s", prefix)
	tail := fmt.Sprintf("?timeout=1s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	bufs := net.Buffers{[]byte(head), name, []byte(tail)}
	_, _ = bufs.WriteTo(conn) // the server may close before it read all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// vmHWM is the process's peak resident set, for the log.
func vmHWM() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestHostileClientsHTTP2: the port speaks HTTP/1.1 only, so a client that
// asks for HTTP/2 cannot multiplex requests past the connection bound, nor
// have the server buffer bodies before the handler reads them.
func TestHostileClientsHTTP2(t *testing.T) {
	_, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const conns, requests = 2, 12
	var inFlight, most, proto2 atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			proto2.Add(1)
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		// held long enough for the other requests to arrive, were they
		// let in
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
		}
	})
	addr := serve(t, &Server{CertFile: cert, KeyFile: key, Logger: quiet, Handler: h, MaxConnections: conns})

	// an h2-only client is refused at the handshake (or gets HTTP/1.1)
	if c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}); err == nil {
		p := c.ConnectionState().NegotiatedProtocol
		c.Close()
		if p == "h2" {
			t.Errorf("a client offering only h2 negotiated %q", p)
		}
	}

	// a client forcing HTTP/2 falls back to HTTP/1.1, a connection a request
	hc := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(hc.CloseIdleConnections)
	var protos sync.Map
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			resp, err := hc.Get("https://" + addr + "/healthz")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			protos.Store(resp.Proto, true)
		})
	}
	wg.Wait()
	var seen []string
	protos.Range(func(k, _ any) bool { seen = append(seen, k.(string)); return true })
	t.Logf("%d requests forcing HTTP/2 over %d connections: protocols %v, at most %d at once", requests, conns, seen, most.Load())
	if n := proto2.Load(); n > 0 {
		t.Errorf("%d requests served over HTTP/2", n)
	}
	if m := most.Load(); m > conns {
		t.Errorf("%d requests served at once, want at most %d (the connection bound)", m, conns)
	}
}
