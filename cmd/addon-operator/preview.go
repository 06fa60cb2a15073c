package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/preview"
)

// errDiffFound makes `diff` exit 1 without an error message, as diff(1) does.
var errDiffFound = errors.New("differences found")

// previewOptions choose the tree and values of render and diff.
type previewOptions struct {
	Repo           string
	WorkTree       string
	ModulesDir     string
	GlobalHooksDir string
	ValuesFile     string
	Namespace      string
	Auth           gitsync.Auth
	// ExecHooks runs the tree's --config and enabled scripts (and then
	// verifies signatures with VerifyKeysDir); off, a preview runs none of
	// the previewed code.
	ExecHooks     bool
	VerifyKeysDir string
	TreeRootAlias string
	ExtraPaths    string
	// Cluster: the cluster previewed (its config in git, its SOPS keys).
	Cluster previewCluster
	// ShowSecrets prints Secrets' data; off, their values are redacted.
	ShowSecrets bool
}

func (o *previewOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&o.Repo, "repo", e.str([]string{"GIT_URL"}, "."), "repository to read refs from (env GIT_URL; default: the current directory)")
	fs.StringVar(&o.WorkTree, "work-tree", "", "the working copy rendered when no ref is given (default: --repo when it is a local directory, else the current directory)")
	fs.StringVar(&o.ModulesDir, "modules-dir", e.str([]string{"MODULES_DIR", "ADDON_OPERATOR_MODULES_DIR"}, "modules"), "modules directories, separated by ':', inside the repository; for the working copy also absolute directories anywhere (env MODULES_DIR)")
	fs.StringVar(&o.GlobalHooksDir, "global-hooks-dir", e.str([]string{"GLOBAL_HOOKS_DIR", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR"}, "global-hooks"), "global hooks directory inside the repository; for the working copy also an absolute directory (env GLOBAL_HOOKS_DIR)")
	bindTreeRootAlias(fs, e, &o.TreeRootAlias)
	fs.StringVar(&o.ExtraPaths, "git-extra-paths", e.str([]string{"GIT_EXTRA_PATHS"}, ""), "more paths inside the repository to check out for a ref, separated by ':': what the modules' links and $refs lead to (env GIT_EXTRA_PATHS)")
	fs.StringVar(&o.ValuesFile, "values", "", "ConfigMap values: a ConfigMap manifest, or a map of sections (global: {...}, someModule: {...})")
	fs.StringVar(&o.Namespace, "namespace", e.str([]string{"ADDON_OPERATOR_NAMESPACE"}, "default"), "namespace the manifests are rendered for")
	fs.StringVar(&o.Auth.Username, "git-username", e.str([]string{"GIT_USERNAME"}, ""), "user name for https (env GIT_USERNAME)")
	fs.StringVar(&o.Auth.PasswordFile, "git-password-file", e.str([]string{"GIT_PASSWORD_FILE"}, ""), "https password file (env GIT_PASSWORD_FILE)")
	fs.StringVar(&o.Auth.TokenFile, "git-token-file", e.str([]string{"GIT_TOKEN_FILE"}, ""), "https token file (env GIT_TOKEN_FILE)")
	fs.StringVar(&o.Auth.SSHKeyFile, "git-ssh-key-file", e.str([]string{"GIT_SSH_KEY_FILE"}, ""), "ssh key file (env GIT_SSH_KEY_FILE)")
	fs.StringVar(&o.Auth.KnownHostsFile, "git-known-hosts-file", e.str([]string{"GIT_KNOWN_HOSTS_FILE"}, ""), "known_hosts file (env GIT_KNOWN_HOSTS_FILE)")
	fs.BoolVar(&o.ExecHooks, "exec-hooks", false, "run the previewed tree's hook --config calls and enabled scripts (off: nothing from the tree runs; refs must then pass GIT_VERIFY_KEYS_DIR)")
	fs.StringVar(&o.VerifyKeysDir, "git-verify-keys-dir", e.str([]string{"GIT_VERIFY_KEYS_DIR"}, ""), "trusted signing keys; with --exec-hooks a ref's commit must be signed by one (env GIT_VERIFY_KEYS_DIR)")
	o.Cluster.bind(fs, e)
	fs.BoolVar(&o.ShowSecrets, "show-secrets", false, "print the data of Secrets in the manifests (default: each value "+preview.Redacted+", its key kept)")
}

// configData reads --values.
func (o *previewOptions) configData() (map[string]string, error) {
	if o.ValuesFile == "" {
		return map[string]string{}, nil
	}
	b, err := os.ReadFile(o.ValuesFile)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", o.ValuesFile, err)
	}
	if d, ok := doc["data"].(map[string]any); ok && doc["kind"] == "ConfigMap" {
		doc = d
	}
	out := map[string]string{}
	for k, v := range doc {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		y, err := yaml.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[k] = string(y)
	}
	return out, nil
}

// render renders the tree at ref (checked out from the repository) or, with
// an empty ref, the working copy; showSecrets keeps Secrets' data (diff
// compares it, and redacts what it prints).
func (o *previewOptions) render(ctx context.Context, ref string, showSecrets bool) (*preview.Preview, error) {
	config, err := o.configData()
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cluster, err := o.Cluster.loaderOptions()
	if err != nil {
		return nil, err
	}
	ld := loader.New(append(cluster, loader.WithLogger(logger), loader.WithHookConfigs(o.ExecHooks), loader.WithTreeRootAlias(o.TreeRootAlias))...)
	opts := preview.Options{Loader: ld, Config: config, Namespace: o.Namespace, ExecHooks: o.ExecHooks, ShowSecrets: showSecrets, Logger: logger}
	if ref == "" {
		var err error
		if opts.Root, opts.ModulesDir, opts.GlobalHooksDir, err = o.workingCopy(); err != nil {
			return nil, err
		}
		return preview.Render(ctx, opts)
	}
	wt, err := o.workTree()
	if err != nil {
		return nil, err
	}
	modulesDirs, err := inRepo("--modules-dir", "with --ref", relativeTo(wt, o.ModulesDir))
	if err != nil {
		return nil, err
	}
	global, err := oneInRepo("--global-hooks-dir", "with --ref", relativeTo(wt, o.GlobalHooksDir))
	if err != nil {
		return nil, err
	}
	extra, err := extraPaths(o.ExtraPaths)
	if err != nil {
		return nil, err
	}
	extra = append(extra, o.Cluster.checkoutPaths()...)
	return preview.RenderRef(ctx, preview.Ref{Repo: o.Repo, Ref: ref, ModulesDirs: modulesDirs, GlobalHooksDir: global, ExtraPaths: extra,
		Auth: o.Auth, VerifyKeysDir: o.VerifyKeysDir, RootAlias: o.TreeRootAlias}, opts)
}

// workTree is the working copy's absolute path: --work-tree, or --repo
// when it is a local directory, else the current directory.
func (o *previewOptions) workTree() (string, error) {
	wt := o.WorkTree
	if wt == "" {
		wt = "."
		if st, err := os.Stat(o.Repo); err == nil && st.IsDir() {
			wt = o.Repo
		}
	}
	return filepath.Abs(wt)
}

// relativeTo makes the absolute directories of a list that are inside the
// work tree relative to it, so the same --modules-dir names a ref's tree
// too (diff --from REF of a working copy).
func relativeTo(wt, list string) string {
	dirs := filepath.SplitList(list)
	for i, p := range dirs {
		if rel, err := filepath.Rel(wt, p); err == nil && filepath.IsAbs(p) && filepath.IsLocal(rel) {
			dirs[i] = rel
		}
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}

// workingCopy is where the working copy's tree is: relative directories
// inside the work tree, which bounds links in them. An absolute directory
// may be anywhere, in a repository or not; when one is outside the work
// tree, each directory bounds itself, as start's no-git mode does.
func (o *previewOptions) workingCopy() (root, modulesDirs, globalHooksDir string, err error) {
	if root, err = o.workTree(); err != nil {
		return "", "", "", err
	}
	outside := false
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			return filepath.Join(root, p)
		}
		if rel, err := filepath.Rel(root, p); err != nil || !filepath.IsLocal(rel) {
			outside = true
		}
		return filepath.Clean(p)
	}
	var dirs []string
	for _, p := range filepath.SplitList(o.ModulesDir) {
		if p != "" {
			dirs = append(dirs, abs(p))
		}
	}
	globalHooksDir = abs(o.GlobalHooksDir)
	if outside {
		root = ""
	}
	return root, strings.Join(dirs, string(filepath.ListSeparator)), globalHooksDir, nil
}

// renderCommand runs `render` on args.
func renderCommand(args []string, out io.Writer) error { return run(newRenderCmd(), args, out) }

// diffCommand runs `diff` on args.
func diffCommand(args []string, out io.Writer) error { return run(newDiffCmd(), args, out) }

func newRenderCmd() *cobra.Command {
	e := &env{}
	var po previewOptions
	var ref, output string
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the manifests a ref (or the working copy) would install, running none of its code",
		Long: `Print the manifests a ref, or the working copy, would install, module by module.

Nothing from the previewed tree runs unless --exec-hooks is given: no hook --config, no
enabled script (docs/security.md, "Previews"). A module that fails to render does not stop
the others: each failure is reported (module, file, error) and the command exits 1 at the
end. -o json prints each module's result.

--cluster-name previews one cluster: its config in the repository is laid over --values as the
operator lays it over the ConfigMap; SOPS files are decrypted with --sops-key-file, or read as
<encrypted> without it. Secrets' data prints as <redacted> unless --show-secrets
(docs/operator.md, "Previews per cluster").`,
		Example: `  addon-operator render                          # the working copy of the current directory
  addon-operator render --ref refs/pull/42/head --values values.yaml
  addon-operator render --ref main --cluster-name prod --sops-key-file age.key   # one cluster of a fleet`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := e.err(); err != nil {
				return err
			}
			if err := checkOutput(&output, "yaml", "json"); err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), cmd.ErrOrStderr(), &po, ref, output)
		},
	}
	po.bind(cmd.Flags(), e)
	outputFlag(cmd.Flags(), &output, "yaml", "json")
	cmd.Flags().StringVar(&ref, "ref", "", "branch, tag, full ref or commit to render (default: the working copy, see --work-tree)")
	return cmd
}

func newDiffCmd() *cobra.Command {
	e := &env{}
	var po previewOptions
	var from, to, output string
	cmd := &cobra.Command{
		Use:   "diff --from REF [--to REF]",
		Short: "Show what changes between two refs (or a ref and the working copy), running none of their code",
		Long: `Show the modules added, removed and changed between two refs, or a ref and the working
copy, with a unified diff of their manifests. Exits 0 without differences, 1 with, and 2
when the comparison fails, as diff(1) does. A module that fails to render on either side does
not stop the others: each failure is reported (side, module, file, error), the rest is
compared, and the command exits 2 at the end. -o json prints each module's result.

--cluster-name, --cluster-config and --sops-key-file preview one cluster, as render does. The
manifests are compared with Secrets' data, which is printed redacted unless --show-secrets: a
changed value shows as <redacted (changed)>.`,
		Example: `  addon-operator diff --from main --to refs/pull/42/head
  addon-operator diff --from main                # the working copy against main
  addon-operator diff --from main --cluster-name prod   # one cluster; no key: encrypted values as <encrypted>`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := e.err(); err != nil {
				return err
			}
			if from == "" {
				return usageError{errors.New("usage: addon-operator diff --from REF [--to REF]")}
			}
			if err := checkOutput(&output, "yaml", "json"); err != nil {
				return err
			}
			return diff(cmd.OutOrStdout(), cmd.ErrOrStderr(), &po, from, to, output)
		},
	}
	po.bind(cmd.Flags(), e)
	outputFlag(cmd.Flags(), &output, "yaml", "json")
	cmd.Flags().StringVar(&from, "from", "", "the ref before (required)")
	cmd.Flags().StringVar(&to, "to", "", "the ref after (default: the working copy, see --work-tree)")
	return cmd
}

// notEvaluated says what a preview did not evaluate: hooks never run, and
// without --exec-hooks neither do enabled scripts.
func notEvaluated(out io.Writer, p *preview.Preview) {
	if len(p.NotEvaluated) > 0 {
		fmt.Fprintf(out, "# not evaluated: the enabled scripts of %s (counted as enabled; --exec-hooks runs them)\n", strings.Join(p.NotEvaluated, ", "))
	}
}
