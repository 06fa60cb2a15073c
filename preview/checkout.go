package preview

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/gitsync"
)

// Ref is a ref of a repository to preview.
type Ref struct {
	// Repo is a URL, or a local repository's path (made absolute).
	Repo string
	// Ref is a branch, a tag, a full ref or a commit.
	Ref string
	// ModulesDirs (each required in the ref) and GlobalHooksDir are
	// relative to the repository's root; ExtraPaths are more paths to
	// check out (what the modules' links and $refs lead to).
	ModulesDirs    []string
	GlobalHooksDir string
	ExtraPaths     []string
	Auth           gitsync.Auth
	// VerifyKeysDir holds the trusted signing keys; the ref's commit must
	// be signed by one when the preview runs its code (Options.ExecHooks).
	VerifyKeysDir string
	// RootAlias is the tree root alias the git syncer resolves links by.
	RootAlias string
}

// RenderRef checks ref out into a temporary directory, renders it as
// Render does (opts' Root, ModulesDir and GlobalHooksDir are ref's) and
// removes the checkout.
func RenderRef(ctx context.Context, ref Ref, opts Options) (*Preview, error) {
	repo := ref.Repo
	if !strings.Contains(repo, "://") && !strings.Contains(repo, "@") {
		var err error
		if repo, err = filepath.Abs(repo); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "addon-operator-preview-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	verify := ""
	if opts.ExecHooks {
		// only code that runs needs a signature
		verify = ref.VerifyKeysDir
	}
	s, err := gitsync.New(gitsync.Options[struct{}]{URL: repo, Ref: ref.Ref, CheckoutDir: dir, Auth: ref.Auth, Logger: opts.Logger,
		Require: ref.ModulesDirs, Paths: append(append(slices.Clone(ref.ModulesDirs), ref.GlobalHooksDir), ref.ExtraPaths...), VerifyKeysDir: verify, RootAlias: ref.RootAlias})
	if err != nil {
		return nil, err
	}
	rev, _, err := s.Sync(ctx)
	if err != nil {
		return nil, err
	}
	// relative directories are inside the root the loader is given
	opts.Root, opts.ModulesDir, opts.GlobalHooksDir = rev.Dir, strings.Join(ref.ModulesDirs, string(filepath.ListSeparator)), ref.GlobalHooksDir
	return Render(ctx, opts)
}
