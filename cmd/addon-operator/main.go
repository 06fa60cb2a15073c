// Command addon-operator runs the operator (`start`, the default) and its
// helper subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/loader"
)

func main() {
	args := os.Args[1:]
	cmd := "start"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "start":
		err = start(args)
	case "source":
		err = sourceCommand(args)
	case "render":
		err = renderCommand(args, os.Stdout)
	case "diff":
		err = diffCommand(args, os.Stdout)
	case "module", "global", "queue", "hook":
		err = debugCommand(cmd, args, os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (commands: start, source, render, diff, module, global, queue, hook)", cmd)
	}
	if errors.Is(err, errDiffFound) {
		os.Exit(1)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "addon-operator:", err)
		os.Exit(1)
	}
}

// restoredSyncTimeout bounds the first sync when a revision on disk could
// run instead: a remote that hangs does not hold up start-up.
const restoredSyncTimeout = 5 * time.Second

// watchDebounce is how long the tree must be quiet before a change counts.
const watchDebounce = 200 * time.Millisecond

// startOptions are start's settings, and its notes about the original
// addon-operator's names among them.
type startOptions struct {
	op    operatorOptions
	lg    logOptions
	gt    gitOptions
	le    leaderOptions
	notes []note
}

func parseStart(args []string) (*startOptions, error) {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	e := &env{}
	var o startOptions
	o.op.bind(fs, e)
	o.lg.bind(fs, e)
	o.gt.bind(fs, e)
	o.le.bind(fs, e)
	bindOriginal(fs, e)
	fs.Usage = usage(fs)
	if err := parse(fs, e, args); err != nil {
		return nil, err
	}
	originalNotes(fs, e)
	o.notes = e.notes
	return &o, nil
}

func start(args []string) error {
	o, err := parseStart(args)
	if err != nil {
		return err
	}
	op, gt, le := o.op, o.gt, o.le
	logger, err := o.lg.logger(os.Stderr)
	if err != nil {
		return err
	}
	slog.SetDefault(logger)
	for _, n := range o.notes {
		level := slog.LevelInfo
		if n.warn {
			level = slog.LevelWarn
		}
		logger.Log(context.Background(), level, n.msg, n.args...)
	}
	listenAddress, err := op.Listen.address()
	if err != nil {
		return err
	}
	if op.Listen.Port != "" && !strings.HasSuffix(listenAddress, ":"+op.Listen.Port) {
		logger.Warn("setting ignored: the listen address has a port of its own", "port", op.Listen.Port, "listen", listenAddress)
	}
	if op.TempDir != "" {
		if err := os.MkdirAll(op.TempDir, 0o700); err != nil {
			return fmt.Errorf("ADDON_OPERATOR_TMP_DIR: %w", err)
		}
	}
	// client-go's own messages (watch errors, leader election) in the same format
	klog.SetSlogLogger(logger.With("component", "client-go"))
	if os.Getenv("GOGC") == "" {
		// the live heap is small (~7 MiB after converging 100 modules);
		// collecting at +50 % instead of +100 % keeps peak RSS ~3 MiB lower
		// at no measurable cost to converge time (docs/performance.md)
		debug.SetGCPercent(50)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	restConfig, err := restConfig(op.Kube)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	sourceCM := kube.NewConfigMap(client, op.Namespace, op.ConfigMap+sourceSuffix)

	configuredRef := gt.Ref // GIT_REF, what removing the live ref goes back to
	if gt.URL != "" {
		// the live ref in the source ConfigMap wins over GIT_REF
		if data, err := sourceCM.Get(ctx); err != nil {
			return err
		} else if data[sourceRefKey] != "" {
			gt.Ref = data[sourceRefKey]
		}
	} else {
		if op.ModulesDir == "" {
			op.ModulesDir = "/modules"
		}
		if op.GlobalHooksDir == "" {
			op.GlobalHooksDir = "/global-hooks"
		}
	}

	helm, err := kube.NewHelm(restConfig, op.Namespace, logger)
	if err != nil {
		return err
	}
	watcher, err := kube.NewWatcher(restConfig, logger)
	if err != nil {
		return err
	}
	crds, err := kube.NewCRDs(restConfig)
	if err != nil {
		return err
	}
	if op.ParallelModules < 1 {
		return fmt.Errorf("--parallel-modules=%d: want at least 1", op.ParallelModules)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	valuesCM := kube.NewConfigMap(client, op.Namespace, op.ConfigMap)
	operator := lifecycle.New(lifecycle.Config{
		ModulesDir: op.ModulesDir, GlobalHooksDir: op.GlobalHooksDir,
		HookTimeout: op.HookTimeout, RetryMin: op.RetryMin, RetryMax: op.RetryMax, TempDir: op.TempDir,
		ResourcesCheckInterval: op.ResourcesCheckInterval, Logger: logger, Registry: reg, Watcher: watcher,
		PurgeLimit: op.PurgeLimit, ParallelModules: op.ParallelModules, CRDs: crds, Events: valuesCM,
	}, valuesCM, helm, loader.New(loader.WithLogger(logger)))
	var src *source
	if gt.URL != "" {
		if src, err = newSource(gt, &op, operator, logger); err != nil {
			return err
		}
	}

	// HTTP first: /healthz answers while git is retried, /readyz says what
	// start-up waits for
	ln, err := net.Listen("tcp", listenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listenAddress, err)
	}
	var leader *kube.Leader
	if le.Enabled {
		name := le.Name
		if name == "" {
			name = op.ConfigMap
		}
		leader, err = kube.NewLeader(client, kube.LeaderOptions{Namespace: op.Namespace, Name: name, LeaseDuration: le.LeaseDuration, Logger: logger})
		if err != nil {
			return err
		}
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "addon_operator_leader", Help: "1 while this process acts on the cluster (always, without leader election), 0 while it stands by.",
	}, func() float64 {
		if leader == nil || leader.Leading() {
			return 1
		}
		return 0
	}))
	extra := func() map[string]any {
		parts := map[string]any{}
		if src != nil {
			parts["source"] = src.syncer.Status()
		}
		if leader != nil {
			parts["leaderElection"] = leader.Status()
		}
		return parts
	}
	var waiting waitingFor
	if src != nil {
		waiting.set("the first sync from git")
	}
	mux := http.NewServeMux()
	mux.Handle("/", waiting.handler(standby(leader, operator.Handler(lifecycle.HTTPOptions{Extra: extra, Namespace: op.Namespace}))))
	if op.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	if src != nil && gt.WebhookSecret != "" {
		trigger := src.syncer.Trigger
		if leader != nil {
			// a standby relays to the leader through the source ConfigMap, at
			// most one write a second however many webhooks arrive
			relay := gitsync.Coalesce(ctx, time.Second, func(ctx context.Context) { relayWebhook(ctx, sourceCM, logger) })
			trigger = func() {
				src.syncer.Trigger()
				if !leader.Leading() {
					relay()
				}
			}
		}
		hook, err := gitsync.NewWebhook(gt.WebhookSecret, trigger, gitsync.WebhookLogger(logger))
		if err != nil {
			return err
		}
		mux.Handle("/hooks/git", hook)
	}
	// WriteTimeout leaves room for /debug/pprof/profile's 30 s
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	logger.Info("addon-operator starting", "modules_dir", op.ModulesDir, "global_hooks_dir", op.GlobalHooksDir,
		"namespace", op.Namespace, "config_map", op.ConfigMap, "listen", ln.Addr().String())

	// every part runs in one group and start returns once all stopped
	g, ctx := errgroup.WithContext(ctx)
	if os.Getpid() == 1 {
		// no init in the image: orphans of hooks would stay zombies
		g.Go(func() error { executor.ReapOrphans(ctx, logger); return nil })
	}
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	})
	g.Go(func() error {
		if src != nil {
			first, err := src.first(ctx, gt, &waiting, logger)
			if err != nil {
				return nil // stopped before a revision came
			}
			operator.TreeChanged(first)
			g.Go(func() error {
				src.syncer.Run(ctx, gt.PollInterval, func(rev *gitsync.Revision) { operator.TreeChanged(revision(rev)) })
				return nil
			})
			// live ref changes (`source set-ref`, an edit of the source ConfigMap)
			// and webhooks relayed by a standby: SetRef syncs at once
			g.Go(func() error {
				sourceCM.Watch(ctx, func(data map[string]string, _ string) {
					ref := data[sourceRefKey]
					if ref == "" {
						ref = configuredRef
					}
					operator.ConfirmPurge(data[sourceConfirmPurgeKey])
					src.syncer.SetRef(ref)
				})
				return nil
			})
		} else {
			// no-git mode: every save under the directories reloads the tree
			watcher := gitsync.NewWatcher(logger, watchDebounce, watchDirs(op.ModulesDir, op.GlobalHooksDir, logger)...)
			g.Go(func() error {
				if err := watcher.Run(ctx, func() { operator.TreeChanged(lifecycle.Revision{}) }); err != nil {
					logger.Error("tree watcher stopped; edits will not be picked up", "err", err)
				}
				return nil
			})
		}
		waiting.set("")
		if leader == nil {
			return operator.Run(ctx)
		}
		// a standby keeps its checkout current (above) but runs no task
		return leader.Run(ctx, operator.Run)
	})
	return g.Wait()
}

// waitingFor is what start-up waits for, answered on /readyz until it is
// done ("" once the operator runs).
type waitingFor struct{ what atomic.Pointer[string] }

func (w *waitingFor) set(what string) { w.what.Store(&what) }

func (w *waitingFor) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if p := w.what.Load(); r.URL.Path == "/readyz" && (p == nil || *p != "") {
			what := "start-up"
			if p != nil {
				what = *p
			}
			http.Error(rw, "waiting for "+what, http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// standby answers /readyz with 200 while this process stands by for the
// Lease: a standby is ready to take over, and a rolling update must not wait
// for the new pod to lead while the old one holds the Lease. /queue and
// /debug/ say why there are no queues nor modules.
func standby(leader *kube.Leader, next http.Handler) http.Handler {
	if leader == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if leader.Leading() {
			next.ServeHTTP(w, r)
			return
		}
		switch r.URL.Path {
		case "/readyz":
			_, _ = w.Write([]byte("standby: another replica holds the leader Lease\n"))
		case "/queue":
			http.Error(w, "standby: no queues run until this replica holds the leader Lease", http.StatusServiceUnavailable)
		default:
			if strings.HasPrefix(r.URL.Path, "/debug/") {
				http.Error(w, "standby: no modules run until this replica holds the leader Lease; ask the leader", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		}
	})
}

// source is git mode: the syncer and where the tree is inside the
// repository.
type source struct {
	syncer *gitsync.Syncer
	// modulesDirs are MODULES_DIR's directories, each inside the repository
	modulesDirs    []string
	globalHooksDir string
}

// newSource prepares the syncer. Every revision it publishes, and one it
// resumes from disk, is checked by the operator against the real
// ConfigMap first; the revisions the operator runs stay on disk. Every
// modules directory must be in each revision; only they and the global
// hooks directory are checked out, so a module's link must lead inside
// them.
func newSource(gt gitOptions, op *operatorOptions, operator *lifecycle.Operator, logger *slog.Logger) (*source, error) {
	src := &source{modulesDirs: []string{"modules"}, globalHooksDir: "global-hooks"}
	var err error
	if op.ModulesDir != "" {
		if src.modulesDirs, err = inRepo("MODULES_DIR", "with GIT_URL", op.ModulesDir); err != nil {
			return nil, err
		}
	}
	if op.GlobalHooksDir != "" {
		if src.globalHooksDir, err = oneInRepo("GLOBAL_HOOKS_DIR", "with GIT_URL", op.GlobalHooksDir); err != nil {
			return nil, err
		}
	}
	// the loader takes relative directories inside the checkout it is given
	if gt.CheckoutDir, err = filepath.Abs(gt.CheckoutDir); err != nil {
		return nil, err
	}
	modulesDir := strings.Join(src.modulesDirs, string(filepath.ListSeparator))
	src.syncer, err = gitsync.New(gitsync.Options{
		URL: gt.URL, Ref: gt.Ref, CheckoutDir: gt.CheckoutDir, Timeout: gt.Timeout, VerifyKeysDir: gt.VerifyKeysDir,
		Require: src.modulesDirs, Paths: append(slices.Clone(src.modulesDirs), src.globalHooksDir), Logger: logger,
		MaxFileSize: gt.MaxFileSize, MaxFiles: gt.MaxFiles, MaxCheckoutSize: gt.MaxCheckoutSize,
		Auth: gitsync.Auth{Username: gt.Username, PasswordFile: gt.PasswordFile, TokenFile: gt.TokenFile,
			SSHKeyFile: gt.SSHKeyFile, KnownHostsFile: gt.KnownHostsFile},
		Validate: func(ctx context.Context, dir string) (*loader.Model, error) {
			return operator.CheckTree(ctx, dir, modulesDir, src.globalHooksDir)
		},
		InUse: operator.InUse,
	})
	if err != nil {
		return nil, err
	}
	return src, nil
}

// watchDirs are the directories whose edits reload a working copy: every
// modules directory, the global hooks directory, and the directories that
// modules linked from a modules directory lead to (the watcher does not
// follow links). A module linked in later is watched from the next start.
func watchDirs(modulesDirs, globalHooksDir string, logger *slog.Logger) []string {
	dirs := append(filepath.SplitList(modulesDirs), globalHooksDir)
	for _, d := range filepath.SplitList(modulesDirs) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue // the load says what is wrong with it
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := filepath.EvalSymlinks(filepath.Join(d, e.Name()))
			if st, serr := os.Stat(target); err == nil && serr == nil && st.IsDir() {
				logger.Debug("watching a linked module", "link", filepath.Join(d, e.Name()), "target", target)
				dirs = append(dirs, target)
			}
		}
	}
	return dirs
}

// first is the revision the operator starts with: the remote's, or, while
// the remote cannot be reached, the newest revision on disk that the
// current keys and configuration still accept (the syncer keeps retrying
// the remote). With neither, it retries with backoff until one comes; it
// fails only when ctx is done.
func (src *source) first(ctx context.Context, gt gitOptions, waiting *waitingFor, logger *slog.Logger) (lifecycle.Revision, error) {
	restored := src.syncer.Restore(ctx)
	for attempt := 0; ; attempt++ {
		syncCtx, cancel := ctx, context.CancelFunc(func() {})
		if restored != nil {
			// a revision to run is at hand: wait for the remote only briefly
			syncCtx, cancel = context.WithTimeout(ctx, restoredSyncTimeout)
		}
		rev, _, err := src.syncer.Sync(syncCtx)
		cancel()
		if err == nil {
			logger.Info("git source ready", "url", gitsync.Scrub(gt.URL), "ref", gt.Ref, "revision", rev.Commit)
			return revision(rev), nil
		}
		if restored != nil {
			logger.Error("first sync failed; running the revision on disk and retrying", "revision", restored.Commit, "err", err)
			return revision(restored), nil
		}
		wait := min(time.Second<<min(attempt, 5), gt.PollInterval)
		waiting.set("the first sync from git: " + err.Error())
		logger.Error("first sync failed; retrying", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return lifecycle.Revision{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// revision is what the operator needs of a published git revision.
func revision(r *gitsync.Revision) lifecycle.Revision {
	return lifecycle.Revision{Commit: r.Commit, Ref: r.Ref, Dir: r.Dir, Model: r.Model}
}

// restConfig loads a kubeconfig (its current context, or the one named),
// or the in-cluster config when neither a kubeconfig, a context nor a
// server is given. Client-side throttling is lifted to what an API server
// takes: the operator's work is bursts of small requests.
func restConfig(o kubeOptions) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Config == "" && o.Context == "" && o.Server == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.Config
		overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context, ClusterInfo: clientcmdapi.Cluster{Server: o.Server}}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "addon-operator"
	return cfg, nil
}
