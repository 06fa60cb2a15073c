package webview

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeGuard admits clients from 127.0.0.1, as statusapi.LocalOnly admits
// the operator's own host.
func fakeGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.RemoteAddr, "127.0.0.1:") {
			http.Error(w, "local only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fakeAPI serves body as /status and diff as every module's diff behind
// fakeGuard, as statusapi does.
func fakeAPI(body []byte, diff string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	mux.Handle("GET /debug/modules/{name}/diff", fakeGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "--- %s\n%s", r.PathValue("name"), diff)
	})))
	return mux
}

func hostile(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/hostile-status.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve asks h for path as a client at remote.
func serve(t *testing.T, h http.Handler, remote, path string) (int, http.Header, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Header(), w.Body.String()
}

const (
	local  = "127.0.0.1:40000"
	remote = "10.1.2.3:40000"
)

var hostileModule = Prefix + "modules/" + url.PathEscape("<script>alert('name')</script>")

// Every text of /status reaches the pages escaped: a module's name, its
// error, health and drift, a task, the source's URL and subjects.
func TestPagesEscape(t *testing.T) {
	t.Parallel()
	h := New(Options{API: fakeAPI(hostile(t), ""), Guard: fakeGuard}).Handler()
	for _, c := range []struct {
		path string
		want []string // escaped, as the page must show them
	}{
		{Prefix, []string{"&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;", "&#34;&gt;&lt;img src=x onerror=alert(&#39;err&#39;)&gt;", "&lt;script&gt;alert(&#39;tree&#39;)", "&lt;script&gt;alert(&#39;task&#39;)"}},
		{hostileModule, []string{"&lt;b onmouseover=alert(&#39;msg&#39;)&gt;", "&lt;svg onload=alert(&#39;obj&#39;)&gt;", "&lt;i&gt;dep&lt;/i&gt;", ".data.&lt;u&gt;key&lt;/u&gt;", "password &lt;redacted&gt;"}},
		{Prefix + "revision", []string{"&lt;script&gt;alert(&#39;subject&#39;)", "&lt;script&gt;alert(&#39;history&#39;)", "Eve &lt;eve@example&gt;", "alert(&#39;url&#39;)"}},
		{Prefix + "queues", []string{"run &lt;script&gt;alert(&#39;task&#39;)&lt;/script&gt;"}},
		{Prefix + "modules/" + url.PathEscape("<svg onload=alert('404')>"), []string{"&lt;svg onload=alert(&#39;404&#39;)&gt;"}},
	} {
		for _, part := range []string{"", "?part=main"} {
			code, hdr, body := serve(t, h, remote, c.path+part)
			if code != http.StatusOK && !strings.Contains(c.path, "404") {
				t.Fatalf("%s%s: %d %s", c.path, part, code, body)
			}
			if !strings.Contains(hdr.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("%s: no CSP", c.path)
			}
			for _, bad := range []string{"<script>alert", "<img src", "<svg", "<b on", "<i>dep", "<u>key", "<redacted>"} {
				if strings.Contains(body, bad) {
					t.Errorf("%s%s shows %q unescaped", c.path, part, bad)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s%s does not show %q", c.path, part, w)
				}
			}
		}
	}
}

// The pages show the fields they know of /status, never the rest (where a
// value could be), and a module's diff only to clients the guard admits.
func TestNoValuesOutsideTheGuard(t *testing.T) {
	t.Parallel()
	h := New(Options{API: fakeAPI(hostile(t), "+  password: hunter2-diff\n"), Guard: fakeGuard}).Handler()
	paths := []string{Prefix, Prefix + "modules/plain", hostileModule, Prefix + "revision", Prefix + "queues",
		Prefix + "modules/plain/diff", Prefix + "assets/live.js", Prefix + "assets/style.css"}
	for _, p := range paths {
		_, _, body := serve(t, h, remote, p)
		if strings.Contains(body, "hunter2") {
			t.Errorf("%s shows a value to a remote client: %s", p, body)
		}
	}
	if code, _, _ := serve(t, h, remote, Prefix+"modules/plain/diff"); code != http.StatusForbidden {
		t.Errorf("the diff page answered a remote client %d, want 403", code)
	}
	_, _, body := serve(t, h, remote, Prefix+"modules/plain")
	if strings.Contains(body, "/diff") || !strings.Contains(body, `data-testid="diffnote"`) {
		t.Errorf("a remote client's module page links the diff:\n%s", body)
	}
	_, _, body = serve(t, h, local, Prefix+"modules/plain")
	if !strings.Contains(body, `href="/ui/modules/plain/diff"`) {
		t.Errorf("a local client's module page does not link the diff:\n%s", body)
	}
	code, _, body := serve(t, h, local, Prefix+"modules/"+url.PathEscape("<x>")+"/diff")
	if code != http.StatusOK || !strings.Contains(html.UnescapeString(body), "+  password: hunter2-diff") || !strings.Contains(body, "--- &lt;x&gt;") {
		t.Errorf("a local client's diff page: %d\n%s", code, body)
	}
}

// The view's guard and the API's are both asked: a guard that admits
// everyone still gets the API's refusal, not the diff.
func TestDiffRefusedByTheAPI(t *testing.T) {
	t.Parallel()
	admitAll := func(next http.Handler) http.Handler { return next }
	h := New(Options{API: fakeAPI(hostile(t), "+ hunter2\n"), Guard: admitAll}).Handler()
	_, _, body := serve(t, h, remote, Prefix+"modules/plain/diff")
	if strings.Contains(body, "hunter2") || !strings.Contains(body, "403: local only") {
		t.Errorf("the diff page without the API's consent:\n%s", body)
	}
	// no guard at all: nothing linked, nothing served
	h = New(Options{API: fakeAPI(hostile(t), "+ hunter2\n")}).Handler()
	if code, _, body := serve(t, h, local, Prefix+"modules/plain/diff"); code != http.StatusForbidden || strings.Contains(body, "hunter2") {
		t.Errorf("without a guard the diff page answered %d: %s", code, body)
	}
}

// manyModules is /status with n modules, each failing, Degraded and
// drifted, with the longest lines /status gives.
func manyModules(n int) []byte {
	st := map[string]any{"ready": true, "revision": strings.Repeat("a", 40)}
	var mods []map[string]any
	for i := range n {
		mods = append(mods, map[string]any{
			"name": fmt.Sprintf("module-with-a-long-name-%03d", i), "enabled": true, "state": "Failed",
			"lastError": "hook " + strings.Repeat("x", 200) + ": exited 1",
			"health": map[string]any{"status": "Degraded", "message": "Deployment/ns/app: " + strings.Repeat("m", 100), "total": 5,
				"objects": []map[string]any{{"kind": "Deployment", "namespace": "ns", "name": "app", "status": "Failed", "health": "Degraded"}}},
			"drift": map[string]any{"mode": "warn", "objects": []map[string]any{{"kind": "ConfigMap", "name": "cm", "fields": []string{".data.a"}}}},
		})
	}
	st["modules"] = mods
	st["queues"] = []map[string]any{{"name": "main", "tasks": []map[string]any{{"id": 1, "kind": "ModuleRun", "description": "run module", "running": true}}}}
	b, _ := json.Marshal(st)
	return b
}

// The first page, with its style and script, stays under 100 KB for 100
// modules (docs/operator.md, "Web view").
func TestFirstPageSize(t *testing.T) {
	t.Parallel()
	h := New(Options{API: fakeAPI(manyModules(100), "")}).Handler()
	total := 0
	for _, p := range []string{Prefix, Prefix + "assets/style.css", Prefix + "assets/live.js"} {
		code, _, body := serve(t, h, remote, p)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", p, code)
		}
		total += len(body)
	}
	_, _, page := serve(t, h, remote, Prefix)
	if n := strings.Count(page, "<tr data-module="); n != 100 {
		t.Fatalf("the page lists %d modules, want 100", n)
	}
	t.Logf("first page with 100 modules: %d bytes with its assets", total)
	if total > 100*1024 {
		t.Fatalf("first page with 100 modules is %d bytes, want under 100 KB", total)
	}
}

// A refresh asks ?part=main: the main part alone, with an ETag; asked
// again with it, 304.
func TestRefreshPart(t *testing.T) {
	t.Parallel()
	h := New(Options{API: fakeAPI(hostile(t), "")}).Handler()
	code, hdr, body := serve(t, h, remote, Prefix+"?part=main")
	if code != http.StatusOK || strings.Contains(body, "<html") || !strings.Contains(body, `data-module="plain"`) || hdr.Get("ETag") == "" {
		t.Fatalf("part=main: %d %v\n%s", code, hdr, body)
	}
	r := httptest.NewRequest(http.MethodGet, Prefix+"?part=main", nil)
	r.Header.Set("If-None-Match", hdr.Get("ETag"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Fatalf("unchanged part: %d, %d bytes", w.Code, w.Body.Len())
	}
	_, _, full := serve(t, h, remote, Prefix)
	if !strings.Contains(full, `<main id="live" data-poll="2000">`) || !strings.Contains(full, `src="/ui/assets/live.js"`) {
		t.Fatalf("the full page does not refresh itself:\n%s", full)
	}
}

// Modules are listed by weight when cmd gives weights.
func TestModulesByWeight(t *testing.T) {
	t.Parallel()
	body := []byte(`{"modules":[{"name":"b"},{"name":"a"},{"name":"c"}],"queues":[]}`)
	h := New(Options{API: fakeAPI(body, ""), Weights: func() map[string]int { return map[string]int{"a": 10, "b": 20, "c": 5} }}).Handler()
	_, _, page := serve(t, h, remote, Prefix)
	ia, ib, ic := strings.Index(page, `data-module="a"`), strings.Index(page, `data-module="b"`), strings.Index(page, `data-module="c"`)
	if ic < 0 || ic >= ia || ia >= ib {
		t.Fatalf("order c(5) a(10) b(20): positions %d %d %d", ic, ia, ib)
	}
	if !strings.Contains(page, `<td class="num">10</td>`) {
		t.Fatal("the weight is not shown")
	}
}

// When /status cannot be had, every page says why with a 503.
func TestStatusUnavailable(t *testing.T) {
	t.Parallel()
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "starting <now>", http.StatusServiceUnavailable)
	})
	h := New(Options{API: api, Logger: discard()}).Handler()
	code, _, body := serve(t, h, remote, Prefix)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "/status answered 503: starting &lt;now&gt;") {
		t.Fatalf("%d\n%s", code, body)
	}
}

// Assets are served with their types; the templates are not assets.
func TestAssets(t *testing.T) {
	t.Parallel()
	h := New(Options{API: fakeAPI(hostile(t), "")}).Handler()
	for path, want := range map[string]string{"style.css": "text/css", "live.js": "javascript"} {
		code, hdr, _ := serve(t, h, remote, Prefix+"assets/"+path)
		if code != http.StatusOK || !strings.Contains(hdr.Get("Content-Type"), want) {
			t.Errorf("%s: %d %s", path, code, hdr.Get("Content-Type"))
		}
	}
	for _, p := range []string{"assets/pages.html", "assets/"} {
		if code, _, _ := serve(t, h, remote, Prefix+p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	if code, _, _ := serve(t, h, remote, Prefix+"nothing"); code != http.StatusNotFound {
		t.Errorf("an unknown page: %d", code)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A page that once answered an error answers its own page again once
// /status does.
func TestErrorPageDoesNotStay(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	failing.Store(true)
	good := fakeAPI(hostile(t), "")
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		good.ServeHTTP(w, r)
	})
	h := New(Options{API: api, Logger: discard()}).Handler()
	if code, _, _ := serve(t, h, remote, Prefix); code != http.StatusServiceUnavailable {
		t.Fatalf("while /status fails: %d", code)
	}
	failing.Store(false)
	if code, _, body := serve(t, h, remote, Prefix); code != http.StatusOK || !strings.Contains(body, `data-module="plain"`) {
		t.Fatalf("once /status answers: %d\n%s", code, body)
	}
}
