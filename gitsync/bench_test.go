package gitsync

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// bigRepo builds, with git fast-import, a bare repository of 2000 files and
// 1000 commits (the first adds every file, each later one changes one).
func bigRepo(b *testing.B, root string) string {
	b.Helper()
	bare := filepath.Join(root, "big.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", bare).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	var in bytes.Buffer
	mark := 0
	blob := func(content string) int {
		mark++
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", mark, len(content), content)
		return mark
	}
	when := int64(1767225600)
	for c := range 1000 {
		type change struct {
			path string
			mark int
		}
		var changes []change
		if c == 0 {
			for f := range 2000 {
				changes = append(changes, change{fmt.Sprintf("modules/%03d-mod/templates/file-%04d.yaml", f%100, f), blob(strings.Repeat(fmt.Sprintf("line %d of file %d\n", f, f), 20))})
			}
		} else {
			f := c % 2000
			changes = append(changes, change{fmt.Sprintf("modules/%03d-mod/templates/file-%04d.yaml", f%100, f), blob(fmt.Sprintf("changed in commit %d\n", c))})
		}
		mark++
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter Bench <b@example.com> %d +0000\ndata %d\n%s\n", mark, when+int64(c), len(msg), msg)
		if c > 0 {
			fmt.Fprintf(&in, "from :%d\n", mark-2)
		}
		for _, ch := range changes {
			fmt.Fprintf(&in, "M 100644 :%d %s\n", ch.mark, ch.path)
		}
		in.WriteString("\n")
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = bare, &in
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v: %s", err, out)
	}
	return bare
}

// pushCommit adds one commit to main of the bare repository.
func pushCommit(b *testing.B, bare string, n int) {
	b.Helper()
	work := b.TempDir()
	run := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@e", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@e")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run(work, "clone", "--quiet", "--depth", "1", "file://"+bare, "w")
	w := filepath.Join(work, "w")
	if err := os.WriteFile(filepath.Join(w, "modules/000-mod/templates/file-0000.yaml"), []byte(fmt.Sprintf("new %d\n", n)), 0o644); err != nil {
		b.Fatal(err)
	}
	run(w, "commit", "--quiet", "-am", fmt.Sprintf("new %d", n))
	run(w, "push", "--quiet", "origin", "main")
}

// measure runs a command under /usr/bin/time and returns its wall time
// and peak RSS (bytes). The rusage of a child started from this process
// would not do: its maximum RSS includes this process's, which the child
// shares until it execs.
func measure(tb testing.TB, cmd *exec.Cmd) (time.Duration, int64) {
	tb.Helper()
	took, rss, _ := measureOutput(tb, cmd)
	return took, rss
}

// measureOutput is measure that also returns the command's output.
func measureOutput(tb testing.TB, cmd *exec.Cmd) (time.Duration, int64, string) {
	tb.Helper()
	report := filepath.Join(tb.TempDir(), "rss")
	timed := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", report}, cmd.Args...)...)
	timed.Dir, timed.Env = cmd.Dir, cmd.Env
	var out bytes.Buffer
	timed.Stdout, timed.Stderr = &out, &out
	start := time.Now()
	if err := timed.Run(); err != nil {
		tb.Fatalf("%v: %v\n%s", cmd.Args, err, out.String())
	}
	took := time.Since(start)
	data, err := os.ReadFile(report)
	if err != nil {
		tb.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		tb.Fatalf("/usr/bin/time reported %q", data)
	}
	return took, kib * 1024, out.String()
}

// ours runs one Syncer.Sync of paths (default: modules) in a child
// process (this test binary), so its time and peak RSS are measured like
// git's.
func ours(url, checkout string, paths ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSync$")
	cmd.Env = append(os.Environ(), "HELPER_SYNC_URL="+url, "HELPER_SYNC_DIR="+checkout, "HELPER_SYNC_PATHS="+strings.Join(paths, ","))
	return cmd
}

// TestHelperSync is the child process of BenchmarkGitSideBySide and
// BenchmarkMonorepo.
func TestHelperSync(t *testing.T) {
	url := os.Getenv("HELPER_SYNC_URL")
	if url == "" {
		return // not a child: nothing to do
	}
	paths := []string{"modules"}
	if p := os.Getenv("HELPER_SYNC_PATHS"); p != "" {
		paths = strings.Split(p, ",")
	}
	s, err := New(Options[any]{URL: url, Ref: "main", CheckoutDir: os.Getenv("HELPER_SYNC_DIR"), Paths: paths,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// a child starts without the previous run's in-memory state: it resumes
	// the revision on disk (a restart's one-time check of it, which a
	// running operator does not pay per sync: reported for the parent to
	// leave out) and syncs once from the kept object store
	start := time.Now()
	s.Restore(t.Context())
	fmt.Printf("restore-ns=%d\n", time.Since(start).Nanoseconds())
	if _, _, err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// oursSync runs ours and returns the time of its sync, without the time
// its Restore took, and its peak RSS.
func oursSync(tb testing.TB, url, checkout string) (time.Duration, int64) {
	tb.Helper()
	took, rss, out := measureOutput(tb, ours(url, checkout))
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "restore-ns="); ok {
			ns, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				tb.Fatalf("child reported %q", line)
			}
			return took - time.Duration(ns), rss
		}
	}
	tb.Fatalf("the child did not report its restore time:\n%s", out)
	return 0, 0
}

func median[T cmp.Ordered](d []T) T {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkGitSideBySide compares the syncer with the git CLI on the same
// loopback HTTP server and repository (2000 files, 1000 commits): the
// initial checkout (git clone --depth 1), fetching one new commit (git
// fetch) and a no-change poll (git ls-remote). Each is run 5 times,
// alternating; medians and their ratio are reported. Run with -benchtime 1x.
func BenchmarkGitSideBySide(b *testing.B) {
	root := b.TempDir()
	bare := bigRepo(b, root)
	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	url := srv.URL("big")
	const rounds = 5
	report := func(name string, o, g []time.Duration, oRSS, gRSS int64) {
		b.ReportMetric(float64(median(o).Microseconds())/1000, name+"-ours-ms")
		b.ReportMetric(float64(median(g).Microseconds())/1000, name+"-git-ms")
		b.ReportMetric(float64(median(o))/float64(median(g)), name+"-ratio")
		b.ReportMetric(float64(oRSS)/(1<<20), name+"-ours-MiB")
		b.ReportMetric(float64(gRSS)/(1<<20), name+"-git-MiB")
	}
	for range b.N {
		var o, g []time.Duration
		var oRSS, gRSS int64
		for i := range rounds {
			d, rss := measure(b, ours(url, filepath.Join(b.TempDir(), "c")))
			o, oRSS = append(o, d), max(oRSS, rss)
			d, rss = measure(b, exec.Command("git", "clone", "--quiet", "--depth", "1", "--branch", "main", url, filepath.Join(b.TempDir(), fmt.Sprint("g", i))))
			g, gRSS = append(g, d), max(gRSS, rss)
		}
		report("clone", o, g, oRSS, gRSS)

		// fetching one new commit into a kept store
		oursDir := filepath.Join(b.TempDir(), "kept")
		measure(b, ours(url, oursDir))
		gitDir := filepath.Join(b.TempDir(), "gitkept")
		measure(b, exec.Command("git", "clone", "--quiet", "--bare", url, gitDir))
		o, g, oRSS, gRSS = nil, nil, 0, 0
		for i := range rounds {
			pushCommit(b, bare, i)
			d, rss := oursSync(b, url, oursDir)
			o, oRSS = append(o, d), max(oRSS, rss)
			cmd := exec.Command("git", "fetch", "--quiet", "origin", "+refs/heads/main:refs/heads/main")
			cmd.Dir = gitDir
			d, rss = measure(b, cmd)
			g, gRSS = append(g, d), max(gRSS, rss)
		}
		report("fetch", o, g, oRSS, gRSS)

		// a poll when nothing changed: no objects may move
		o, g, oRSS, gRSS = nil, nil, 0, 0
		for range rounds {
			uploads := srv.UploadPackRequests()
			d, rss := oursSync(b, url, oursDir)
			if n := srv.UploadPackRequests() - uploads; n != 0 {
				b.Fatalf("a no-change poll made %d object-transferring requests", n)
			}
			o, oRSS = append(o, d), max(oRSS, rss)
			// (git's protocol v2 lists refs with a POST to git-upload-pack, so it is not counted)
			d, rss = measure(b, exec.Command("git", "ls-remote", url, "refs/heads/main"))
			g, gRSS = append(g, d), max(gRSS, rss)
		}
		report("poll", o, g, oRSS, gRSS)
	}
}

// buildMonorepo builds, with git fast-import, a bare repository of one commit:
// 48,000 files of incompressible content (200 MiB) under services/, and
// the checked-out paths, modules/ (2,000 small files) and global-hooks/.
func buildMonorepo(b *testing.B, root string) {
	b.Helper()
	bare := filepath.Join(root, "mono.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", bare).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	cmd := exec.Command("git", "-c", "pack.compression=1", "fast-import", "--quiet")
	cmd.Dir = bare
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	in := bufio.NewWriterSize(stdin, 1<<20)
	rng := rand.NewChaCha8([32]byte{})
	mark := 0
	var files []string
	add := func(path string, content []byte) {
		mark++
		fmt.Fprintf(in, "blob\nmark :%d\ndata %d\n", mark, len(content))
		in.Write(content)
		in.WriteString("\n")
		files = append(files, fmt.Sprintf("M 100644 :%d %s\n", mark, path))
	}
	buf := make([]byte, 8<<10)
	for f := range 48000 {
		n := 1024 + f*7919%(7<<10) // 1 to 8 KiB, 4.4 KiB on average
		_, _ = rng.Read(buf[:n])
		add(fmt.Sprintf("services/s%03d/f%05d.bin", f/100, f), buf[:n])
	}
	for f := range 2000 {
		add(fmt.Sprintf("modules/%03d-mod/templates/file-%04d.yaml", f/20, f), []byte(strings.Repeat(fmt.Sprintf("line of file %d\n", f), 30)))
	}
	for f := range 5 {
		add(fmt.Sprintf("global-hooks/hook-%d.sh", f), []byte(fmt.Sprintf("#!/bin/sh\necho hook %d\n", f)))
	}
	add("README.md", []byte("a monorepo\n"))
	mark++
	fmt.Fprintf(in, "commit refs/heads/main\nmark :%d\ncommitter Bench <b@example.com> 1767225600 +0000\ndata 8\nmonorepo\n", mark)
	for _, f := range files {
		in.WriteString(f)
	}
	in.WriteString("\n")
	if err := in.Flush(); err != nil {
		b.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("fast-import: %v: %s", err, stderr.String())
	}
}

// BenchmarkMonorepo compares first syncs of modules/ and global-hooks/
// from a monorepo (50,000 files, 200 MiB of blobs, modules/ 2,000 files)
// behind loopback HTTP: ours from a server that filters (a blob-less
// fetch of the commit's trees, then the blobs under the paths) against
// git's own partial clone (git clone --depth 1 --filter=blob:none
// --sparse, then git sparse-checkout set) on the same server, and ours
// from a second server on the same repository that does not filter (the
// whole commit). Each is run 3 times, alternating; medians of the time
// and of the bytes the server sent, and their ratios, are reported. Run
// with -benchtime 1x.
func BenchmarkMonorepo(b *testing.B) {
	root := b.TempDir()
	buildMonorepo(b, root)
	filtered, err := gitserver.StartHTTP(root, gitserver.WithFilter())
	if err != nil {
		b.Fatal(err)
	}
	defer filtered.Stop()
	whole, err := gitserver.StartHTTP(root)
	if err != nil {
		b.Fatal(err)
	}
	defer whole.Stop()
	const rounds = 3
	paths := []string{"modules", "global-hooks"}
	// run times cmds one after the other and counts what srv sent for them
	run := func(srv *gitserver.HTTPServer, cmds ...*exec.Cmd) (time.Duration, int64, int64) {
		sent := srv.BytesSent()
		var took time.Duration
		var peak int64
		for _, cmd := range cmds {
			d, rss := measure(b, cmd)
			took, peak = took+d, max(peak, rss)
		}
		return took, srv.BytesSent() - sent, peak
	}
	for range b.N {
		var o, g, w []time.Duration
		var oBytes, gBytes, wBytes []int64
		var oRSS, gRSS, wRSS int64
		for i := range rounds {
			d, n, rss := run(filtered, ours(filtered.URL("mono"), filepath.Join(b.TempDir(), "c"), paths...))
			o, oBytes, oRSS = append(o, d), append(oBytes, n), max(oRSS, rss)

			dir := filepath.Join(b.TempDir(), fmt.Sprint("g", i))
			d, n, rss = run(filtered,
				exec.Command("git", "clone", "--quiet", "--depth", "1", "--filter=blob:none", "--sparse", filtered.URL("mono"), dir),
				exec.Command("git", "-C", dir, "sparse-checkout", "set", "modules", "global-hooks"))
			g, gBytes, gRSS = append(g, d), append(gBytes, n), max(gRSS, rss)

			d, n, rss = run(whole, ours(whole.URL("mono"), filepath.Join(b.TempDir(), "w"), paths...))
			w, wBytes, wRSS = append(w, d), append(wBytes, n), max(wRSS, rss)
		}
		oB, gB, wB := median(oBytes), median(gBytes), median(wBytes)
		b.ReportMetric(float64(median(o).Microseconds())/1000, "ours-ms")
		b.ReportMetric(float64(median(g).Microseconds())/1000, "git-ms")
		b.ReportMetric(float64(median(w).Microseconds())/1000, "ours-whole-ms")
		b.ReportMetric(float64(median(o))/float64(median(g)), "time-ratio")
		b.ReportMetric(float64(oB)/(1<<10), "ours-KiB")
		b.ReportMetric(float64(gB)/(1<<10), "git-KiB")
		b.ReportMetric(float64(wB)/(1<<10), "ours-whole-KiB")
		b.ReportMetric(float64(oB)/float64(gB), "bytes-ratio")
		b.ReportMetric(float64(median(w))/float64(median(o)), "whole-to-partial-time")
		b.ReportMetric(float64(oRSS)/(1<<20), "ours-MiB")
		b.ReportMetric(float64(gRSS)/(1<<20), "git-MiB")
		b.ReportMetric(float64(wRSS)/(1<<20), "ours-whole-MiB")
	}
}
