package webview

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed assets
var assets embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"moduleURL": func(name string) string { return Prefix + "modules/" + url.PathEscape(name) },
	"short":     shortCommit,
	"clip":      clip,
	"when":      when,
	"lower":     strings.ToLower,
}).ParseFS(assets, "assets/*.html"))

// pageData is what every page's template gets.
type pageData struct {
	Page   string
	Status *status
	Data   any
	Poll   int64
	Path   string
}

type errorPage struct{ Message string }

// modulePageData is a module's page: Diff links its live diff for
// clients the guard admits.
type modulePageData struct {
	Module module
	Diff   bool
}

type diffPageData struct {
	Module string
	Diff   string
	Error  string
}

func (v *View) modulesPage(_ *http.Request, _ *status) (any, int) { return nil, http.StatusOK }

func (v *View) revisionPage(_ *http.Request, _ *status) (any, int) { return nil, http.StatusOK }

func (v *View) queuesPage(_ *http.Request, _ *status) (any, int) { return nil, http.StatusOK }

func (v *View) modulePage(r *http.Request, st *status) (any, int) {
	m, ok := st.module(r.PathValue("name"))
	if !ok {
		return errorPage{Message: fmt.Sprintf("module %q is not in the running tree", r.PathValue("name"))}, http.StatusNotFound
	}
	return modulePageData{Module: m, Diff: v.admitted(r)}, http.StatusOK
}

// diffPage shows /debug/modules/NAME/diff, asked with the client's
// request: the API's guard and redaction judge it again.
func (v *View) diffPage(r *http.Request, _ *status) (any, int) {
	name := r.PathValue("name")
	code, body := v.ask(r, "/debug/modules/"+url.PathEscape(name)+"/diff")
	d := diffPageData{Module: name}
	if code != http.StatusOK {
		d.Error = fmt.Sprintf("%d: %s", code, firstLine(string(body)))
		return d, http.StatusOK
	}
	d.Diff = string(body)
	return d, http.StatusOK
}

func assetHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is there at build time
	}
	files := http.StripPrefix(Prefix+"assets/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".html") || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // the templates and listings are not assets
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	})
}

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// clip cuts s to n runes, for the overview's one-line cells (the
// module's page shows the whole line).
func clip(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// when is t in UTC to the second ("" for none): absolute, so an
// unchanged page keeps its ETag between refreshes.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.DateTime) + " UTC"
}
