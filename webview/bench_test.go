package webview

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkFirstPage renders the modules page for 100 modules, each
// failing, Degraded and drifted (manyModules), from the /status answer to
// the HTML: its time per render and its bytes with the assets
// (docs/benchmarks.md).
func BenchmarkFirstPage(b *testing.B) {
	h := New(Options{API: fakeAPI(manyModules(100), "")}).Handler()
	assets := 0
	for _, p := range []string{Prefix + "assets/style.css", Prefix + "assets/live.js"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p, nil))
		assets += w.Body.Len()
	}
	page := 0
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, Prefix, nil))
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		page = w.Body.Len()
	}
	b.ReportMetric(float64(page), "page-B")
	b.ReportMetric(float64(page+assets), "first-page-B")
}
