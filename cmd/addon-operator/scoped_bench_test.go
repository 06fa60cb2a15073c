package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/benchtree"
)

// BenchmarkOneModuleCommit runs the real binary in git mode on the
// reference tree (N=100) and, side by side in one process, times two
// kinds of commit from the revision's publication (the syncer's log line)
// to the end of what it causes (the operator's log lines):
//   - one module's values.yaml changed: to that module's release upgraded
//     (the module-scoped path);
//   - modules/values.yaml's global section changed: to the reload's
//     convergence (every module runs).
//
// push-to-upgraded-s times the one-module commit from outside: from just
// before the commit is pushed to the module's upgrade (the webhook, the
// fetch and the revision included).
func BenchmarkOneModuleCommit(b *testing.B) {
	const n = 100
	for range b.N {
		repo := newRepo(b, b.TempDir())
		tree := b.TempDir()
		if err := benchtree.Generate(n, tree); err != nil {
			b.Skip(err)
		}
		// gen-modules.sh empties its output directory: the working copy's .git stays out of it
		if out, err := exec.Command("cp", "-a", tree+"/.", repo.Dir).CombinedOutput(); err != nil {
			b.Fatalf("copy the tree: %v: %s", err, out)
		}
		if _, err := repo.Commit("reference tree"); err != nil {
			b.Fatal(err)
		}
		if err := repo.Push(); err != nil {
			b.Fatal(err)
		}
		secretFile := filepath.Join(b.TempDir(), "secret")
		if err := os.WriteFile(secretFile, []byte("s3cr3t\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		ns := namespace(b, "bench-scoped")
		op := startOperator(b, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main",
			"GIT_POLL_INTERVAL=1h", "GIT_WEBHOOK_SECRET_FILE="+secretFile, "GIT_CHECKOUT_DIR="+filepath.Join(b.TempDir(), "checkout"),
			"LOG_TYPE=json", "LOG_LEVEL=info")
		poll(b, "the first converge", func() bool { return convergedCount(b, op.log) > 0 })
		trigger := func() { postWebhook(b, op.addr, "s3cr3t") }
		var scoped, all, outside []time.Duration
		for i := range 3 {
			pushed := time.Now()
			sha := commitFiles(b, repo, "one module", map[string]string{
				"modules/050-mod-bx/values.yaml": fmt.Sprintf("modBx:\n  greeting: \"edit %d\"\n  index: 50\n", i),
			})
			trigger()
			var d time.Duration
			var upgraded time.Time
			poll(b, "the module's upgrade", func() bool {
				var ok bool
				d, upgraded, ok = between(b, op.log, sha, func(l logLine) bool { return l.Msg == "helm release applied" && l.Module == "mod-bx" })
				return ok
			})
			scoped = append(scoped, d)
			outside = append(outside, upgraded.Sub(pushed))

			converged := convergedCount(b, op.log)
			sha = commitFiles(b, repo, "global", map[string]string{
				"modules/values.yaml": globalValues(b, repo.Dir, i),
			})
			trigger()
			poll(b, "the reload", func() bool {
				var ok bool
				d, _, ok = between(b, op.log, sha, func(l logLine) bool { return l.Msg == "converged" })
				return ok && convergedCount(b, op.log) > converged
			})
			all = append(all, d)
		}
		b.ReportMetric(median(scoped).Seconds(), "one-module-s")
		b.ReportMetric(median(outside).Seconds(), "push-to-upgraded-s")
		b.ReportMetric(median(all).Seconds(), "reload-all-s")
		b.ReportMetric(float64(median(all))/float64(median(scoped)), "reload-all/one-module")
		op.stop(10 * time.Second)
	}
}

// globalValues is modules/values.yaml with the global section's param
// changed (every module's Enabled flag kept).
func globalValues(b *testing.B, dir string, i int) string {
	data, err := os.ReadFile(filepath.Join(dir, "modules/values.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "param:") {
			line = fmt.Sprintf("    param: \"v%d\"", i+2)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

type logLine struct {
	Time   time.Time `json:"time"`
	Msg    string    `json:"msg"`
	Module string    `json:"module"`
	// Revision is a commit in the syncer's lines, a number in Helm's
	Revision json.RawMessage `json:"revision"`
}

// between finds the publication of revision sha in the operator's log and
// the first line after it that done accepts; it returns the time between,
// and that line's time.
func between(b *testing.B, path, sha string, done func(logLine) bool) (time.Duration, time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var published time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch {
		case published.IsZero():
			if l.Msg == "revision published" && string(l.Revision) == strconv.Quote(sha) {
				published = l.Time
			}
		case done(l):
			return l.Time.Sub(published), l.Time, true
		}
	}
	return 0, time.Time{}, false
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
