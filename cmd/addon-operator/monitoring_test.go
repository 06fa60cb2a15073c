package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/deploy/monitoring"
)

// monitoringTree is one tree that makes every documented metric appear: a
// global hook with a kubernetes binding (jqFilter) and a schedule, a
// module with an enabled script, a chart and a hook writing METRICS_PATH.
func monitoringTree(ns string) map[string]string {
	files := moduleFiles("001-alpha", "alpha", "1")
	files["modules/values.yaml"] = "alphaEnabled: true\n"
	// the config in git, for addon_operator_config_drift
	files["clusters/monitoring/config.yaml"] = "alphaEnabled: true\n"
	// a health wait, for addon_operator_health_waits_total
	files["modules/001-alpha/Chart.yaml"] += "annotations:\n  addonops.io/health-wait: \"true\"\n"
	files["modules/001-alpha/enabled"] = "#!/usr/bin/env bash\necho true > \"$MODULE_ENABLED_RESULT\"\n"
	files["modules/001-alpha/hooks/a.sh"] = "#!/usr/bin/env bash\n" +
		`if [ "$1" = --config ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi` + "\n" +
		`echo '{"name":"alpha_items","set":1}' > "$METRICS_PATH"` + "\n"
	files["global-hooks/g.sh"] = "#!/usr/bin/env bash\n" +
		`if [ "$1" = --config ]; then echo '{"configVersion":"v1","onStartup":1,` +
		`"schedule":[{"name":"tick","crontab":"*/1 * * * * *","queue":"ticks"}],` +
		`"kubernetes":[{"name":"cms","apiVersion":"v1","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["` + ns + `"]}},"jqFilter":".metadata.name"}]}'; exit 0; fi` + "\n" +
		`echo '{"name":"g_runs_total","add":1}' > "$METRICS_PATH"` + "\n"
	return files
}

// documentedNames reads the metric names of docs/operator.md's table: the
// first column and the deprecated ones it replaces.
func documentedNames(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := regexp.MustCompile("`(addon_operator_[a-z_]+)`")
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `addon_operator_") {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	if len(out) < 50 {
		t.Fatalf("docs/operator.md's metrics table: %d names", len(out))
	}
	return out
}

// One tree through a real operator in git mode: every name of
// docs/operator.md's table (the original's and our deprecated ones) is
// served, and a real Prometheus scraping it returns series for every
// dashboard query and every metric the alerts read.
func TestMonitoring(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Fatal("prometheus is missing: run hack/ensure-deps.sh (Debian's prometheus package)")
	}
	ns := namespace(t, "monitoring")
	repo := newRepo(t, t.TempDir())
	commitFiles(t, repo, "tree", monitoringTree(ns))
	addr, _ := operator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"), "ADDON_OPERATOR_RESOURCES_CHECK_INTERVAL=1s",
		"ADDON_OPERATOR_CLUSTER_NAME=monitoring")
	eventually(t, "alpha installed", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	// an event for the kubernetes binding
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "poke"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("names", func(t *testing.T) {
		want := documentedNames(t)
		var missing []string
		served := func() bool {
			_, body := get(addr, "/metrics")
			p := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatalf("/metrics: %v", err)
			}
			missing = missing[:0]
			for _, n := range want {
				if mf := mfs[n]; mf == nil || len(mf.GetMetric()) == 0 {
					missing = append(missing, n)
				}
			}
			return len(missing) == 0
		}
		for deadline := time.Now().Add(60 * time.Second); !served() && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		if len(missing) > 0 {
			t.Fatalf("not served: %v", missing)
		}
		_, hooks := get(addr, "/metrics/hooks")
		for _, s := range []string{`alpha_items{hook="hooks/a.sh",module="alpha"} 1`, `g_runs_total{hook="g.sh"} 1`} {
			if !strings.Contains(hooks, s) {
				t.Fatalf("/metrics/hooks has no %s:\n%s", s, hooks)
			}
		}
	})

	t.Run("prometheus", func(t *testing.T) {
		prom := startPrometheus(t, addr)
		qs, err := monitoring.Queries("../../deploy/monitoring")
		if err != nil {
			t.Fatal(err)
		}
		metric := regexp.MustCompile(`addon_operator_[a-z_]+`)
		for _, q := range qs {
			exprs := []string{q.Expr}
			if strings.HasPrefix(q.Where, "alert ") {
				// a healthy operator fires no alert: what each alert reads must exist
				exprs = metric.FindAllString(q.Expr, -1)
			}
			for _, e := range exprs {
				var n int
				deadline := time.Now().Add(60 * time.Second)
				for n = promQuery(t, prom, e); n == 0 && time.Now().Before(deadline); n = promQuery(t, prom, e) {
					time.Sleep(500 * time.Millisecond)
				}
				if n == 0 {
					t.Errorf("%s: %s returns no series", q.Where, e)
				}
			}
		}
	})
}

// startPrometheus runs Prometheus on 127.0.0.1 with its data in a temp dir,
// scraping target every second; it is killed by its PID when the test ends.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: addon-operator\n    static_configs: [{targets: [%q]}]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command("prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.console.templates="+dir, "--web.console.libraries="+dir)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	eventually(t, "prometheus ready and scraping", func() bool {
		return promQuery(t, "http://"+addr, `up{job="addon-operator"} == 1`) > 0
	})
	return "http://" + addr
}

// promQuery evaluates expr now and returns how many series it gave (0
// while Prometheus does not answer yet).
func promQuery(t *testing.T, base, expr string) int {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0
	}
	if r.Status != "success" {
		if resp.StatusCode == http.StatusBadRequest {
			t.Fatalf("%s: %s", expr, r.Error)
		}
		return 0
	}
	return len(r.Data.Result)
}
