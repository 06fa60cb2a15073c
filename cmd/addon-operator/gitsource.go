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
// hooks directory are checked out, so a module's link must lead inside
// them.
func newSource(gt gitOptions, op *operatorOptions, operator *lifecycle.Operator, refused func(gitsync.Revision, error), logger *slog.Logger) (*source, error) {
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
	modulesDir := strings.Join(src.modulesDirs, string(filepath.ListSeparator))
	src.syncer, err = gitsync.New(gitsync.Options[*loader.Model]{
		URL: gt.URL, Ref: gt.Ref, CheckoutDir: gt.CheckoutDir, Timeout: gt.Timeout, VerifyKeysDir: gt.VerifyKeysDir,
		Require: src.modulesDirs, Paths: append(append(slices.Clone(src.modulesDirs), src.globalHooksDir), extra...), Logger: logger, RootAlias: op.TreeRootAlias,
		MaxFileSize: gt.MaxFileSize, MaxFiles: gt.MaxFiles, MaxCheckoutSize: gt.MaxCheckoutSize,
		Auth: gitsync.Auth{Username: gt.Username, PasswordFile: gt.PasswordFile, TokenFile: gt.TokenFile,
			SSHKeyFile: gt.SSHKeyFile, KnownHostsFile: gt.KnownHostsFile},
		// the model rides on the revision (Checked.Model) to the operator,
		// which runs it without reading the files again
		Validate: func(ctx context.Context, dir string) (*loader.Model, error) {
			return operator.CheckTree(ctx, dir, modulesDir, src.globalHooksDir)
		},
		Refused: refused,
		InUse:   operator.InUse,
	})
	if err != nil {
		return nil, err
	}
	return src, nil
}

// first is the revision the operator starts with: the newest revision on
// disk that the current keys and configuration still accept, at once
// (the poll loop then syncs with the remote, which may hang or send a pack
// that takes long to index: docs/git.md), else the remote's. With neither,
// it retries with backoff until one comes; it fails only when ctx is done.
func (src *source) first(ctx context.Context, gt gitOptions, waiting *waitingFor, logger *slog.Logger) (lifecycle.Revision, error) {
	if restored := src.syncer.Restore(ctx); restored != nil {
		logger.Info("running the revision on disk; syncing with the remote next", "revision", restored.Commit)
		return *restored, nil
	}
	for attempt := 0; ; attempt++ {
		rev, _, err := src.syncer.Sync(ctx)
		if err == nil {
			logger.Info("git source ready", "url", gitsync.Scrub(gt.URL), "ref", gt.Ref, "revision", rev.Commit)
			return *rev, nil
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

// followSource runs the syncer in g, and follows live ref changes (`source
// set-ref`, an edit of the source ConfigMap) and webhooks relayed by a
// standby: SetRef syncs at once.
func (s *startup) followSource(ctx context.Context, g *errgroup.Group) {
	g.Go(func() error {
		s.src.syncer.Run(ctx, s.gt.PollInterval, func(rev *lifecycle.Revision) { s.operator.TreeChanged(*rev) })
		return nil
	})
	g.Go(func() error {
		s.sourceCM.Watch(ctx, func(data map[string]string, _ string) {
			ref := data[sourceRefKey]
			if ref == "" {
				ref = s.configuredRef
			}
			s.operator.ConfirmPurge(data[sourceConfirmPurgeKey])
			s.src.syncer.SetRef(ref)
		})
		return nil
	})
}
