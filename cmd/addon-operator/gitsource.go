package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/loader"
)

// source is git mode: the syncer and where the tree is inside the
// repository.
type source struct {
	syncer *gitsync.Syncer[*loader.Model]
	// modulesDirs are MODULES_DIR's directories, each inside the repository
	modulesDirs    []string
	globalHooksDir string
}

// newSource prepares the syncer. Every revision it publishes, and one it
// resumes from disk, is checked by the operator against the real
// ConfigMap first; the revisions the operator runs stay on disk. Every
// modules directory must be in each revision; only they and the global
// hooks directory are checked out (and configPaths, the cluster's config's:
// docs/operator.md, "Config in git"), so a module's link must lead inside
// them.
func newSource(gt gitOptions, op *operatorOptions, configPaths []string, operator *lifecycle.Operator, refused func(gitsync.Revision, error), gate gitsync.Gate, learn func(string, *loader.Model) error, logger *slog.Logger) (*source, error) {
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
	extra, err := extraPaths(gt.ExtraPaths)
	if err != nil {
		return nil, err
	}
	extra = append(extra, configPaths...)
	modulesDir := strings.Join(src.modulesDirs, string(filepath.ListSeparator))
	src.syncer, err = gitsync.New(gitsync.Options[*loader.Model]{
		URL: gt.URL, Ref: gt.Ref, CheckoutDir: gt.CheckoutDir, Timeout: gt.Timeout, VerifyKeysDir: gt.VerifyKeysDir,
		Require: src.modulesDirs, Paths: append(append(slices.Clone(src.modulesDirs), src.globalHooksDir), extra...), Logger: logger, RootAlias: op.TreeRootAlias,
		MaxFileSize: gt.MaxFileSize, MaxFiles: gt.MaxFiles, MaxCheckoutSize: gt.MaxCheckoutSize,
		Auth: gitsync.Auth{Username: gt.Username, PasswordFile: gt.PasswordFile, TokenFile: gt.TokenFile,
			SSHKeyFile: gt.SSHKeyFile, KnownHostsFile: gt.KnownHostsFile},
		// the model rides on the revision (Checked.Model) to the operator,
		// which runs it without reading the files again
		// the rollout sections of the config in git are read here too: a
		// bad one refuses the revision (docs/operator.md, "Fleets")
		Validate: func(ctx context.Context, dir string) (*loader.Model, error) {
			model, err := operator.CheckTree(ctx, dir, modulesDir, src.globalHooksDir)
			if err == nil && learn != nil {
				err = learn(dir, model)
			}
			return model, err
		},
		Refused: refused,
		InUse:   operator.InUse,
		// suspend, rings and windows hold new revisions (docs/operator.md,
		// "Suspend, resume and sync", "Fleets")
		Gate: gate,
	})
	if err != nil {
		return nil, err
	}
	return src, nil
}

// first is the revision the operator starts with (gitsync.First: the
// newest on disk still accepted, else the remote's, retried); /readyz says
// why it is not there yet. It fails only when ctx is done. pin, when set,
// is the suspended revision to start on with an empty checkout;
// stillSuspended is asked after each failure to get it, so a resume frees
// a start whose pinned commit cannot be had (the source ConfigMap's watch
// starts only after the first revision).
func (src *source) first(ctx context.Context, gt gitOptions, pin string, waiting *waitingFor, stillSuspended func(context.Context, error) bool) (lifecycle.Revision, error) {
	if pin != "" && !gitsync.OnDisk(src.syncer) {
		// suspended, with nothing on disk: start on the revision the
		// cluster ran when it was suspended, not the ref's newest, which
		// the gate then holds (docs/operator.md, "Suspend, resume and sync");
		// with revisions on disk Restore wins anyway, and setting the ref
		// would forget the full ref a short one is pinned to (docs/git.md)
		pctx, resumed := context.WithCancel(ctx)
		src.syncer.SetRef(pin)
		rev, err := gitsync.First(pctx, src.syncer, gt.PollInterval, func(err error, _ time.Duration) {
			waiting.set("the first sync from git, of the suspended revision " + pin + ": " + err.Error())
			if !stillSuspended(ctx, err) {
				resumed()
			}
		})
		resumed()
		src.syncer.SetRef(gt.Ref)
		if err == nil {
			return *rev, nil
		}
		if ctx.Err() != nil {
			return lifecycle.Revision{}, err
		}
		// resumed meanwhile: the ref's newest, as without a suspension
	}
	rev, err := gitsync.First(ctx, src.syncer, gt.PollInterval, func(err error, _ time.Duration) {
		waiting.set("the first sync from git: " + err.Error())
	})
	if err != nil {
		return lifecycle.Revision{}, err
	}
	return *rev, nil
}

// followSource runs the syncer in g, and follows live ref changes (`source
// set-ref`, an edit of the source ConfigMap), webhooks relayed by a
// standby, suspend, resume and sync requests (suspend.go): SetRef syncs at
// once, so a resume applies the held revision at once.
func (s *startup) followSource(ctx context.Context, g *errgroup.Group) {
	g.Go(func() error {
		s.src.syncer.Run(ctx, s.gt.PollInterval, func(rev *lifecycle.Revision) {
			s.fleet.adopting(rev.Commit)
			s.operator.TreeChanged(*rev)
		})
		return nil
	})
	g.Go(func() error {
		s.sourceCM.Watch(ctx, func(data map[string]string, _ string) {
			ref := data[sourceRefKey]
			if ref == "" {
				ref = s.configuredRef
			}
			s.operator.ConfirmPurge(data[sourceConfirmPurgeKey])
			what, sus := s.control.update(data)
			s.fleet.update(data)
			if acting(s.leader) {
				if what != "" {
					transitionEvent(ctx, s.sourceCM, what, sus, data, s.logger)
				}
				s.recordSuspendedRevision(ctx, data, sus != nil)
			}
			if token, ok := s.control.ask(data); ok {
				go s.answerSync(ctx, token)
			}
			s.src.syncer.SetRef(ref)
		})
		return nil
	})
}
