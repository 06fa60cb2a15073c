package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/commithealth"
	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/lifecycle/modulestatus"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/objectpatch"
	"github.com/addonops/addon-operator/values"
	"github.com/addonops/addon-operator/webhook"
)

// startOptions are start's settings, and its notes about the original
// addon-operator's names among them.
type startOptions struct {
	op    operatorOptions
	lg    logOptions
	gt    gitOptions
	le    leaderOptions
	cs    commitStatusOptions
	hl    healthOptions
	wh    webhookOptions
	cl    clusterOptions
	notes []note
}

// newStartCmd is `start`, bound to o; e collects the environment's errors
// and notes.
func newStartCmd(o *startOptions, e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the operator (the default command)",
		Long: `Run the operator: follow GIT_URL at GIT_REF (or read MODULES_DIR and GLOBAL_HOOKS_DIR
from disk without GIT_URL), run the modules' hooks and install their charts into the
cluster of KUBECONFIG, or the cluster the pod runs in.

Every flag has an environment fallback named in its help; the flag wins. The original
addon-operator's flags and variables are accepted too (docs/operator.md, "Settings").`,
		Example: `  # the cluster of ~/.kube/config, modules from a repository's main branch
  addon-operator start --git-url https://git.example.com/platform/modules.git --git-ref main

  # modules from directories on disk, a kubeconfig and context of your choice
  addon-operator start --modules-dir ./modules --global-hooks-dir ./global-hooks \
    --kubeconfig ~/.kube/dev --kube-context dev`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.finish(cmd.Flags(), e); err != nil {
				return err
			}
			return start(o)
		},
	}
	o.bind(cmd.Flags(), e)
	return cmd
}

func (o *startOptions) bind(fs *pflag.FlagSet, e *env) {
	o.op.bind(fs, e)
	o.lg.bind(fs, e)
	o.gt.bind(fs, e)
	o.le.bind(fs, e)
	o.cs.bind(fs, e)
	o.hl.bind(fs, e)
	o.wh.bind(fs, e)
	o.cl.bind(fs, e)
	bindOriginal(fs, e)
}

// finish reports the environment's errors, once flags are parsed, and
// notes the original's settings given.
func (o *startOptions) finish(fs *pflag.FlagSet, e *env) error {
	if err := errors.Join(e.errs...); err != nil {
		return err
	}
	// checked whether drift is on or not: a bad list is an error now, not
	// when drift is turned on later
	sensitive, err := drift.ParseKinds(o.op.DriftSensitiveKinds)
	if err != nil {
		return fmt.Errorf("--drift-sensitive-kinds: %w", err)
	}
	o.op.driftSensitive = sensitive
	// one name: the commit status contexts' and the config in git's
	o.cl.Name = o.cs.Cluster
	if err := o.cl.check(o.gt.URL); err != nil {
		return err
	}
	originalNotes(fs, e)
	o.notes = e.notes
	return nil
}

// parseStart parses start's command line as `start` does.
func parseStart(args []string) (*startOptions, error) {
	var o startOptions
	e := &env{}
	cmd := newStartCmd(&o, e)
	if err := cmd.ParseFlags(singleDashLongFlags(cmd, args)); err != nil {
		return nil, err
	}
	if err := o.finish(cmd.Flags(), e); err != nil {
		return nil, err
	}
	return &o, nil
}

// startup is what start wires together: the HTTP server and the run group
// share it.
type startup struct {
	op       operatorOptions
	gt       gitOptions
	logger   *slog.Logger
	operator *lifecycle.Operator
	src      *source          // nil in no-git mode
	leader   *kube.Leader     // nil without leader election
	webhooks *webhook.Servers // nil without webhook certificates
	sourceCM *kube.ConfigMap  // the live ref
	// configuredRef is GIT_REF, what removing the live ref goes back to.
	configuredRef string
	waiting       waitingFor
	notifier      *commitstatus.Notifier // nil: commit status off
	health        *health.Tracker        // nil: health off
	// control is suspend and sync now (suspend.go); purge is since when
	// the purge guard holds a revision
	control *sourceControl
	purge   purgeSeen
	// startPin is the commit to start on when the checkout is empty
	// ("": the ref's newest): the suspended revision, or the one running
	// while a ring or window held a newer one (heldAtPin)
	startPin    string
	heldAtPin   bool
	heldAtTries int
	// fleet is the rollout gate (fleet.go; nil in no-git mode);
	// configHold, the ConfigMap edits its windows hold
	fleet      *fleet
	configHold *lifecycle.ConfigHold
}

func start(o *startOptions) (err error) {
	// secret config values are hidden from every output from the first
	// log line on, and from the error start-up may end with
	// (docs/operator.md, "Secrets")
	redactor := values.NewRedactor()
	defer func() { err = redactedError(redactor, err) }()
	logger, listenAddress, err := setUp(o, redactor)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &startup{op: o.op, gt: o.gt, logger: logger, configuredRef: o.gt.Ref}
	op, gt := &s.op, &s.gt

	restConfig, err := restConfig(op.Kube)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	s.sourceCM = kube.NewConfigMap(client, op.Namespace, op.ConfigMap+sourceSuffix)
	s.sourceCM.RedactEvents(redactor.Text)
	s.control = newSourceControl(logger, nil, func() bool { return acting(s.leader) })
	if gt.URL != "" {
		// the live ref in the source ConfigMap wins over GIT_REF, and a
		// suspension holds from the first sync on
		data, err := s.sourceCM.Get(ctx)
		if err != nil {
			return err
		}
		if data[sourceRefKey] != "" {
			gt.Ref = data[sourceRefKey]
		}
		if _, sus := s.control.update(data); sus != nil {
			logger.Warn("the source is suspended: new revisions are held until `addon-operator source resume`", "reason", sus.Reason, "since", sus.Since)
			s.startPin = pinIn(data, sourceSuspendedRevKey)
		}
		if pin := pinIn(data, sourceHeldAtRevKey); s.startPin == "" && pin != "" {
			logger.Info("a newer revision was held by the rollout: an empty checkout starts on the one that ran", "commit", pin)
			s.startPin, s.heldAtPin = pin, true
		}
	} else {
		if op.ModulesDir == "" {
			op.ModulesDir = "/modules"
		}
		if op.GlobalHooksDir == "" {
			op.GlobalHooksDir = "/global-hooks"
		}
	}

	// releases and CRDs are this instance's: its namespace and ConfigMap
	// (docs/security.md, "Ownership")
	instance := kube.InstanceID(op.Namespace, op.ConfigMap)
	fencing := kube.WithoutFencing()
	if o.le.Enabled {
		fencing = kube.WithLeaseDuration(o.le.LeaseDuration)
	}
	helm, err := kube.NewHelm(restConfig, op.Namespace, logger, kube.WithInstance(instance), fencing)
	if err != nil {
		return err
	}
	watcher, err := kube.NewWatcher(restConfig, logger)
	if err != nil {
		return err
	}
	crds, err := kube.NewCRDs(restConfig, kube.WithInstance(instance))
	if err != nil {
		return err
	}
	patcher, err := objectpatch.New(restConfig, logger)
	if err != nil {
		return err
	}
	var detector lifecycle.DriftDetector // nil: off
	switch op.Drift {
	case lifecycle.DriftWarn, lifecycle.DriftCorrect:
		// as kube.FieldManagerDrift; the registrar's and object patches'
		// fields are the operator's own, never drift (docs/operator.md, "Drift")
		ignore := op.DriftIgnoreManagers
		if ignore == nil {
			ignore = []string{}
		}
		detector, err = drift.New(restConfig, op.Namespace, helm, drift.Options{IgnoreManagers: ignore, Sensitive: op.driftSensitive, Logger: logger})
		if err != nil {
			return err
		}
	case "off":
	default:
		return fmt.Errorf("--drift=%q: want correct, warn or off", op.Drift)
	}
	if op.ParallelModules < 1 {
		return fmt.Errorf("--parallel-modules=%d: want at least 1", op.ParallelModules)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := lifecycle.RegisterClientMetrics(reg); err != nil {
		return err
	}
	valuesCM := kube.NewConfigMap(client, op.Namespace, op.ConfigMap)
	valuesCM.RedactEvents(redactor.Text)
	backend := valuesBackend(valuesCM, kube.NewValuesSecret(client, op.Namespace, op.ValuesSecret), op.ValuesSecret != "", redactor, logger)
	if s.notifier, err = o.cs.notifier(gt.URL, logger); err != nil {
		return err
	}
	// the revision states go to the commit status, through the merger that
	// adds their modules' health once applied when health is on
	var reporter commitstatus.Reporter // nil: commit status off
	var merger *commithealth.Merger
	if s.notifier != nil {
		reporter = redactedReports{s.notifier, redactor}
	}
	// in git mode the rollout gate needs the running revision's state
	// (failed, degraded) whether commit status is on or not: the tap
	// keeps it, after the health merger (docs/operator.md, "Fleets")
	var tap *revisionTap
	if gt.URL != "" {
		tap = newRevisionTap(reporter)
		reporter = tap
	}
	if reporter != nil && o.hl.Enabled {
		merger = commithealth.New(reporter)
		reporter = merger
	}
	// drift checks on edits (docs/operator.md, "Drift"): the tracker tells
	// them to an inbox the operator's drift checks read, made before both
	var edits *lifecycle.EditInbox
	var onEdited func(string)
	if detector != nil {
		edits = lifecycle.NewEditInbox()
		onEdited = edits.Edited
	}
	var onTransition func(health.Transition) // after the transition's Event
	if merger != nil {
		onTransition = merger.Transition
	}
	// a module's Events go on its Module object when there is one
	// (docs/operator.md, "Events")
	objects, err := moduleObjects(client.Discovery(), restConfig, op.Namespace, logger)
	if err != nil {
		return err
	}
	moduleEvents := modulestatus.NewEvents(objects, valuesCM)
	s.health = newHealth(o.hl, watcher, helm, moduleEvents, reg, logger, onTransition, onEdited)
	if merger != nil {
		merger.Follow(s.health)
	}
	ext, err := apiextensions.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	if s.webhooks, err = newWebhookServers(o.wh, op.Namespace, instance, client, ext, logger); err != nil {
		return err
	}
	// without git, an alias maps onto the working copy's top, which then
	// bounds the tree (docs/operator.md, "Trees from git")
	root := ""
	if op.TreeRootAlias != "" && gt.URL == "" {
		if root, err = workTreeTop(op.ModulesDir); err != nil {
			return err
		}
	}
	cfg := lifecycle.Config{
		ModulesDir: op.ModulesDir, GlobalHooksDir: op.GlobalHooksDir, Root: root,
		HookTimeout: op.HookTimeout, RetryMin: op.RetryMin, RetryMax: op.RetryMax, TempDir: op.TempDir,
		ResourcesCheckInterval: op.ResourcesCheckInterval, Logger: logger, Registry: reg, Monitors: lifecycle.KubeMonitors(watcher),
		PurgeLimit: op.PurgeLimit, ParallelModules: op.ParallelModules, CRDs: crds, Events: valuesCM, SourceEvents: s.sourceCM,
		ModuleObjects: objects, ModuleEvents: moduleEvents,
		ObjectPatcher: patcher, Drift: detector, DriftMode: op.Drift, Edits: edits, Redactor: redactor,
	}
	// the optional parts: an interface field stays nil when its part is off
	if reporter != nil {
		cfg.OnRevisionState = revisionStates(reporter)
		s.control.report = reporter.Report
	}
	if gt.URL != "" {
		cfg.DriftHeld = s.control.driftHeld
		// a ConfigMap edit outside a window waits for it (fleet.go)
		s.configHold = lifecycle.NewConfigHold(func() (string, bool) { return s.fleet.configHeld() })
		cfg.ConfigHold = s.configHold
	}
	if s.health != nil {
		cfg.Health = s.health
	}
	if s.webhooks != nil {
		cfg.Webhooks = s.webhooks
	}
	loaderOpts := []loader.Option{loader.WithLogger(logger), loader.WithTreeRootAlias(op.TreeRootAlias)}
	// the cluster's config in git (docs/operator.md, "Config in git"): read
	// with each revision's tree, so it is part of the revision
	clusterLoader, clusterCfg, err := o.cl.loaderOptions(false)
	if err != nil {
		return err
	}
	loaderOpts = append(loaderOpts, clusterLoader...)
	if clusterCfg != nil {
		logger.Info("config in git", "cluster", clusterCfg.Cluster, "layers", o.cl.Config, "keyring", clusterCfg.Keyring)
	}
	s.operator = lifecycle.New(cfg, backend, helm, loader.New(loaderOpts...))
	if s.leader, err = o.le.leader(restConfig, op.Namespace, op.ConfigMap, logger); err != nil {
		return err
	}
	if gt.URL != "" {
		// a refused commit's status: failed, from the leader alone
		refused := func(rev gitsync.Revision, err error) {
			if acting(s.leader) {
				s.operator.Refused(rev.Commit, err)
			}
		}
		var configPaths []string
		if clusterCfg != nil {
			configPaths = o.cl.checkoutPaths()
		}
		lister, err := o.cs.lister(gt.URL)
		if err != nil {
			return err
		}
		s.fleet = s.newFleet(ctx, lister, gt.PollInterval, tap)
		if s.notifier != nil {
			s.fleet.setRing, s.fleet.report = s.notifier.SetRing, reporter.Report
		}
		if s.src, err = newSource(*gt, op, configPaths, s.operator, refused, s.gate, s.fleet.learn, logger); err != nil {
			return err
		}
		registerGitMetrics(reg, s.src.syncer.Status)
		reg.MustRegister(newHeldCollector(func() []gitsync.Hold { return s.sourceView().Held }))
	}

	// HTTP first: /healthz answers while git is retried, /readyz says what
	// start-up waits for
	ln, err := net.Listen("tcp", listenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listenAddress, err)
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "addon_operator_leader", Help: "1 while this process acts on the cluster (always, without leader election), 0 while it stands by.",
	}, func() float64 {
		if acting(s.leader) {
			return 1
		}
		return 0
	}))
	if s.src != nil {
		s.waiting.set("the first sync from git")
	}
	srv, err := s.httpServer(ctx)
	if err != nil {
		return err
	}
	logger.Info("addon-operator starting", "modules_dir", op.ModulesDir, "global_hooks_dir", op.GlobalHooksDir,
		"namespace", op.Namespace, "config_map", op.ConfigMap, "listen", ln.Addr().String(), "web_view", "http://"+ln.Addr().String()+"/ui/")
	return s.run(ctx, srv, ln)
}

// run runs every part in one group and returns once all stopped.
func (s *startup) run(ctx context.Context, srv *http.Server, ln net.Listener) error {
	g, ctx := errgroup.WithContext(ctx)
	if os.Getpid() == 1 {
		// no init in the image: orphans of hooks would stay zombies
		g.Go(func() error { executor.ReapOrphans(ctx, s.logger); return nil })
	}
	serveHTTP(ctx, g, srv, ln)
	if s.notifier != nil {
		g.Go(func() error { s.notifier.Run(ctx); return nil })
	}
	if s.health != nil {
		g.Go(func() error { s.health.Run(ctx); return nil })
	}
	if s.webhooks != nil {
		g.Go(func() error { s.webhooks.Run(ctx, s.operator.Webhooks()); return nil })
	}
	g.Go(func() error {
		if s.src != nil {
			first, err := s.src.first(ctx, s.gt, s.startPin, &s.waiting, s.stillPinned)
			if err != nil {
				return nil // stopped before a revision came
			}
			s.fleet.adopting(first.Commit)
			s.operator.TreeChanged(first)
			s.followSource(ctx, g)
		} else {
			s.watchTree(ctx, g)
		}
		s.waiting.set("")
		if s.leader == nil {
			return s.operator.Run(ctx)
		}
		// a standby keeps its checkout current (above) but runs no task
		err := s.leader.Run(ctx, s.operator.Run)
		if errors.Is(err, kube.ErrLeadershipLost) {
			// fencing (docs/operator.md, "Leader election"): end the
			// process now, which ends a Helm write in flight, rather than
			// wait for the rest of the group (the HTTP shutdown alone takes
			// up to 5 s, about what a successor waits)
			s.logger.Error("leadership lost; exiting so that no write outlives it", "err", err)
			os.Exit(1)
		}
		return err
	})
	return g.Wait()
}
