package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addon-operator/health"
)

// chromiumPath is Debian's chromium, which make deps installs
// (hack/ensure-deps.sh): the browser test fails without it, never skips.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: `make deps` installs Debian's chromium package (apt-get install chromium); the web view's browser test needs it")
	return ""
}

// browser is one headless Chromium tab for the test, with screenshots
// kept in the test's artifact directory (go test -artifacts keeps them
// under -outputdir).
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, dir: t.ArtifactDir()}
	b.do(chromedp.Navigate("about:blank")) // starts the browser
	t.Logf("screenshots of the web view: %s", b.dir)
	return b
}

func (b *browser) do(a chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, a); err != nil {
		b.t.Fatal(err)
	}
}

// js evaluates expr in the page.
func (b *browser) js(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until waits until expr is true in the page, without reloading it: the
// page's own refresh must bring the change.
func (b *browser) until(what, expr string, d time.Duration) {
	b.t.Helper()
	start := time.Now()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		b.t.Fatalf("the page did not show %s within %s: %v\n%s", what, d, err, b.js(`document.querySelector('main').innerText`))
	}
	b.t.Logf("the page showed %s after %s", what, time.Since(start).Round(time.Millisecond))
}

// shot keeps a screenshot of the whole page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// healthCell is the JS for the health cell of module's row.
func healthCell(module string) string {
	return fmt.Sprintf(`(document.querySelector('tr[data-module=%q] td.health') || {}).textContent`, module)
}

// TestWebView drives the web view of a real operator in headless
// Chromium (docs/operator.md, "Web view"), on testdata/health: good turns
// Healthy; stuck, never ready, turns Degraded after its 5 s progress
// timeout, and the modules page, loaded before, shows it without a
// reload; the module's page shows its Deployment, and links its live
// diff (the browser is on the operator's host); a hand edit of good's
// Deployment shows as drift, its field on good's page and its values in
// the diff; a fix commit makes stuck Healthy and the page follows. A
// client that names the host by a DNS name is refused the diff, as
// /debug's, and its pages hold no value. A screenshot of each page is
// kept.
func TestWebView(t *testing.T) {
	p := workloadsPlane(t)
	b := newBrowser(t)
	// drift reported, not corrected: the hand edit below stays
	g := startGitOperatorOn(t, p, "webview", fixture(t, "health"), "ADDON_OPERATOR_DRIFT=warn")
	w := &watching{t: t, p: p, ns: g.NS, addr: g.Op.addr}
	base := "http://" + g.Op.addr
	w.health("good", health.Healthy, 60*time.Second)

	// / redirects to the modules page, listed by weight
	b.do(chromedp.Navigate(base + "/"))
	if loc := b.js(`location.pathname`); loc != "/ui/" {
		t.Fatalf("/ led to %s, want /ui/", loc)
	}
	b.until("good Healthy", healthCell("good")+` === "Healthy"`, 10*time.Second)
	if order := b.js(`[...document.querySelectorAll('tr[data-module]')].map(r => r.cells[0].textContent + ":" + r.dataset.module).join(",")`); order != "1:good,2:stuck" {
		t.Fatalf("modules by weight: %s", order)
	}
	b.js(`window.notReloaded = "yes"`)
	b.until("stuck Degraded", healthCell("stuck")+` === "Degraded"`, 45*time.Second)
	if b.js(`window.notReloaded || ""`) != "yes" {
		t.Fatal("the page reloaded instead of refreshing in place")
	}
	if s := b.js(`document.querySelector('.summary').textContent`); !strings.Contains(s, "1 Degraded") {
		t.Fatalf("summary: %s", s)
	}
	b.shot("modules-degraded")

	// a hand edit of good's Deployment: drifted on the page, live
	scale := `{"spec":{"replicas":3}}`
	if _, err := p.Client.AppsV1().Deployments(g.NS).Patch(t.Context(), "good", types.MergePatchType, []byte(scale), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	b.until("good drifted", `(document.querySelector('tr[data-module="good"] td.drift') || {}).textContent === "1"`, 30*time.Second)
	b.do(chromedp.Navigate(base + "/ui/modules/good"))
	b.until("good's drifted field", `document.querySelector('[data-testid=drift]').innerText.includes("spec.replicas")`, 20*time.Second)
	if d := b.js(`document.querySelector('[data-testid=drift]').innerText`); !strings.Contains(d, "Deployment/"+g.NS+"/good") {
		t.Fatalf("good's drift: %s", d)
	}
	b.shot("module-good-drifted")
	b.do(chromedp.Navigate(base + "/ui/modules/good/diff"))
	if d := b.js(`document.querySelector('[data-testid=diff]').innerText`); !strings.Contains(d, "replicas: 3") || !strings.Contains(d, "replicas: 2") {
		t.Fatalf("good's diff on the operator's host: %s", d)
	}
	b.shot("module-good-diff")

	// stuck's page: its Deployment, Degraded, and the diff linked
	b.do(chromedp.Navigate(base + "/ui/modules/stuck"))
	b.until("stuck's page", `!!document.querySelector('[data-testid=objects]')`, 10*time.Second)
	objs := b.js(`document.querySelector('[data-testid=objects]').innerText`)
	if !strings.Contains(objs, "Deployment") || !strings.Contains(objs, g.NS) || !strings.Contains(objs, "Degraded") {
		t.Fatalf("stuck's objects: %s", objs)
	}
	if h := b.js(`document.querySelector('[data-testid=health]').innerText`); !strings.HasPrefix(h, "Degraded") {
		t.Fatalf("stuck's health: %s", h)
	}
	b.shot("module-stuck")
	b.do(chromedp.Navigate(base + "/ui/modules/stuck/diff"))
	if got := b.js(`(document.querySelector('[data-testid=diff]') || {innerText: document.body.innerText}).innerText`); got == "" || strings.Contains(got, "403") {
		t.Fatalf("the diff page on the operator's host: %q", got)
	}
	b.shot("module-stuck-diff")

	// a client naming the operator by a DNS name is not on its host for
	// /debug's guard: no diff, no link
	for path, want := range map[string]int{"/ui/modules/good/diff": http.StatusForbidden, "/ui/modules/good": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Host = "operator.example"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || strings.Contains(string(body), "/diff\"") || strings.Contains(string(body), "replicas: 3") {
			t.Fatalf("%s with Host operator.example: %d, want %d", path, resp.StatusCode, want)
		}
	}

	// the fix: back to Healthy, and the modules page follows
	b.do(chromedp.Navigate(base + "/ui/"))
	b.until("stuck Degraded", healthCell("stuck")+` === "Degraded"`, 10*time.Second)
	commitFiles(t, g.Repo, "stuck fixed", map[string]string{"modules/002-stuck/values.yaml": "stuck:\n  neverReady: false\n"})
	b.until("stuck Healthy again", healthCell("stuck")+` === "Healthy"`, 60*time.Second)
	b.shot("modules-healthy")

	// the revision and its history; the queues
	b.do(chromedp.Navigate(base + "/ui/revision"))
	b.until("the fix in the history", `document.querySelector('[data-testid=history]').innerText.includes("stuck fixed")`, 10*time.Second)
	if h := b.js(`document.querySelector('[data-testid=history]').innerText`); !strings.Contains(h, "first") {
		t.Fatalf("history: %s", h)
	}
	b.shot("revision")
	b.do(chromedp.Navigate(base + "/ui/queues"))
	b.until("the main queue", `!!document.getElementById('q-main')`, 10*time.Second)
	b.shot("queues")

	// the first page's bytes, with its assets
	total := 0
	for _, path := range []string{"/ui/", "/ui/assets/style.css", "/ui/assets/live.js"} {
		code, body := get(g.Op.addr, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		total += len(body)
	}
	t.Logf("the first page with its assets: %d bytes", total)
	if total > 100*1024 {
		t.Fatalf("the first page is %d bytes, want under 100 KB", total)
	}
}
