package lifecycle

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

func (r *runner) applyObjectPatches(ctx context.Context, hookName string, ops []objectpatch.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if r.cfg.ObjectPatcher == nil {
		return fmt.Errorf("hook %s: %w", hookName, errNoObjectPatcher)
	}
	if err := r.cfg.ObjectPatcher.Apply(ctx, ops); err != nil {
		return fmt.Errorf("hook %s: %w", hookName, err)
	}
	return nil
}

// objectPatchesOnFailure applies, after a failed run, only the status
// patches the hook marked ignoreHookError (objectpatch.OnHookFailure), as
// the original does; the run stays failed, and an error here is added to
// the hook's.
func (r *runner) objectPatchesOnFailure(ctx context.Context, hookName, path string, hookErr error) error {
	ops, err := readObjectPatches(hookName, path)
	if err == nil {
		err = r.applyObjectPatches(ctx, hookName, objectpatch.OnHookFailure(ops))
	}
	if err != nil {
		return fmt.Errorf("%w; status patches: %v", hookErr, err)
	}
	return hookErr
}
