package statusapi

import (
	"bytes"
	"mime"
	"net/http"

	"github.com/addonops/addon-operator/values"
)

// Redacted serves next with every secret config value in its answer
// replaced by <redacted> (docs/operator.md, "Secrets"): a JSON answer in
// its strings, any other as text. /status, /queue and the debug endpoints
// go through it; while r hides nothing, answers pass unbuffered.
func Redacted(r *values.Redactor, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.Empty() {
			next.ServeHTTP(w, req)
			return
		}
		rec := &bufferedWriter{header: w.Header(), code: http.StatusOK}
		next.ServeHTTP(rec, req)
		body := rec.body.Bytes()
		if mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); mt == "application/json" {
			body = r.JSON(body)
		} else {
			body = []byte(r.Text(string(body)))
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.code)
		_, _ = w.Write(body)
	})
}

// bufferedWriter keeps an answer until it is redacted.
type bufferedWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header         { return b.header }
func (b *bufferedWriter) WriteHeader(code int)        { b.code = code }
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
