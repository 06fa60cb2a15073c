package hookrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/addonops/addon-operator/objectpatch"
)

// ObjectPatcher applies the object operations hooks write to
// KUBERNETES_PATCH_PATH (*objectpatch.Applier).
type ObjectPatcher interface {
	Apply(ctx context.Context, ops []objectpatch.Op) error
}

var _ ObjectPatcher = (*objectpatch.Applier)(nil)

var errNoObjectPatcher = errors.New("KUBERNETES_PATCH_PATH: the operator has no API client for object patches")

// readObjectPatches parses a run's KUBERNETES_PATCH_PATH file, read as
// every file a hook hands back (readResultFile), at most objectpatch.MaxOps
// operations (docs/operator.md, "Object patches from hooks").
func readObjectPatches(hookName, path string) ([]objectpatch.Op, error) {
	b, err := readResultFile(hookName, "KUBERNETES_PATCH_PATH", path)
	if err != nil {
		return nil, err
	}
	ops, err := objectpatch.Parse(b, objectpatch.MaxOps)
	if err != nil {
		return nil, fmt.Errorf("hook %s: KUBERNETES_PATCH_PATH: %w", hookName, err)
	}
	return ops, nil
}

func (r *Runner) applyObjectPatches(ctx context.Context, hookName string, ops []objectpatch.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if r.opts.ObjectPatcher == nil {
		return fmt.Errorf("hook %s: %w", hookName, errNoObjectPatcher)
	}
	if r.opts.HookTimeout > 0 {
		// the run's operations together are bounded like the hook itself
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.HookTimeout)
		defer cancel()
	}
	if err := r.opts.ObjectPatcher.Apply(ctx, ops); err != nil {
		return r.objectPatchesFailed(hookName, len(ops), err)
	}
	return nil
}

// objectPatchesFailed makes the one-line error /status and /queue show; the
// operations' errors (API messages, which may quote object values) go to
// the log and to /debug/hooks only (docs/security.md, "Who sees what").
func (r *Runner) objectPatchesFailed(hookName string, total int, err error) error {
	failed := 1
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		failed = len(j.Unwrap())
	}
	first := "an operation"
	var oe *objectpatch.OpError
	if errors.As(err, &oe) {
		first = oe.Op.String() // what the hook wrote: its index, kind and name
	}
	he := &HookError{what: "hook " + hookName, err: err,
		summary: fmt.Sprintf("KUBERNETES_PATCH_PATH: %s failed (%d of %d operations failed; their errors are in the log and /debug/hooks)", first, failed, total)}
	he.output = err.Error()
	if len(he.output) > 64<<10 {
		he.output = he.output[:64<<10] + "\n…"
	}
	r.opts.Logger.Error("object patches failed", "hook", hookName, "failed", failed, "of", total, "err", err)
	r.failures.record(hookName, he)
	return he
}

// objectPatchesOnFailure applies, after a failed run, only the status
// patches the hook marked ignoreHookError (objectpatch.OnHookFailure), as
// the original does; the run stays failed, and an error here is added to
// the hook's.
func (r *Runner) objectPatchesOnFailure(ctx context.Context, hookName, path string, hookErr error) error {
	ops, err := readObjectPatches(hookName, path)
	if err == nil {
		err = r.applyObjectPatches(ctx, hookName, objectpatch.OnHookFailure(ops))
	}
	if err != nil {
		return fmt.Errorf("%w; status patches: %v", hookErr, err)
	}
	return hookErr
}
