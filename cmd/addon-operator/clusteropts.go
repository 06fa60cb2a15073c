package main

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/rollout"
	"github.com/addonops/addon-operator/secretfile"
)

// clusterOptions say where the cluster's config is in the repository and
// which keys decrypt its SOPS files (docs/operator.md, "Config in git").
type clusterOptions struct {
	// Name turns the config in git on; empty: the ConfigMap alone.
	Name string
	// Config are the layers, comma-separated, each perhaps "optional:".
	Config []string
	// KeyFiles are age or PGP key files, or directories of them.
	KeyFiles []string
}

// sopsKeyEnv is ours; SOPS_AGE_KEY_FILE, the sops tool's, is read when it
// is not set.
var sopsKeyEnv = []string{"ADDON_OPERATOR_SOPS_KEY_FILE", "SOPS_AGE_KEY_FILE"}

// clusterNameUsage is --cluster-name's help: one name serves the config in
// git and the commit status contexts.
const clusterNameUsage = "the cluster's name, a DNS name: its config (settings and *Enabled flags) is read from the repository, and commit status contexts are addon-operator/<name> (env ADDON_OPERATOR_CLUSTER_NAME; empty: the values ConfigMap alone)"

// bind binds the layers and the key files; the name is bound with the
// commit status options (commitStatusOptions.Cluster), which it serves too.
func (o *clusterOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.StringSliceVar(&o.Config, "cluster-config", e.list("ADDON_OPERATOR_CLUSTER_CONFIG", nil), "where the cluster's config is in the repository: comma-separated files, globs or folders (with a trailing /), later over earlier, {cluster} replaced by the cluster's name, each prefixed optional: when it may name nothing (env ADDON_OPERATOR_CLUSTER_CONFIG; default "+clusterconfig.DefaultPath+")")
	var keys []string
	for _, n := range sopsKeyEnv {
		if keys = e.list(n, nil); keys != nil {
			break
		}
	}
	fs.StringSliceVar(&o.KeyFiles, "sops-key-file", keys, "comma-separated files or directories (a mounted Secret) of age identities or armored PGP private keys that decrypt SOPS-encrypted config and values files; re-read at each decryption (env ADDON_OPERATOR_SOPS_KEY_FILE, SOPS_AGE_KEY_FILE)")
}

// check refuses a bad cluster name, and a cluster name without a git
// source: the config is read from the repository's revisions.
func (o clusterOptions) check(gitURL string) error {
	if o.Name == "" {
		if len(o.Config) > 0 {
			return errors.New("--cluster-config (ADDON_OPERATOR_CLUSTER_CONFIG) needs --cluster-name (ADDON_OPERATOR_CLUSTER_NAME)")
		}
		return nil
	}
	if err := o.checkName(); err != nil {
		return err
	}
	if gitURL == "" {
		return fmt.Errorf("--cluster-name (ADDON_OPERATOR_CLUSTER_NAME) %q needs a git source (--git-url, GIT_URL): the cluster's config is read from the repository's revisions", o.Name)
	}
	_, err := o.layers()
	return err
}

// checkName refuses a name that is not a DNS name.
func (o clusterOptions) checkName() error {
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return fmt.Errorf("--cluster-name (ADDON_OPERATOR_CLUSTER_NAME) %q: want a DNS name: %s", o.Name, strings.Join(errs, "; "))
	}
	return nil
}

// layers are Config as clusterconfig's layers (none: its default).
func (o clusterOptions) layers() ([]clusterconfig.Layer, error) {
	var out []clusterconfig.Layer
	for _, c := range o.Config {
		p, optional := strings.CutPrefix(strings.TrimSpace(c), "optional:")
		if p = strings.TrimSpace(p); p == "" {
			return nil, fmt.Errorf("--cluster-config (ADDON_OPERATOR_CLUSTER_CONFIG) %q: an empty layer", c)
		}
		// a glob in the first folder would check out the whole tree
		// (checkoutPaths)
		if first, _, _ := strings.Cut(path.Clean("/" + p)[1:], "/"); strings.ContainsAny(first, "*?[") {
			return nil, fmt.Errorf("--cluster-config (ADDON_OPERATOR_CLUSTER_CONFIG) %q: a glob in the first folder would check out the whole repository; put the files in a folder (clusters/*.yaml)", c)
		}
		out = append(out, clusterconfig.Layer{Path: p, Optional: optional})
	}
	return out, nil
}

// keyring is the key files' keyring, nil without key files. It re-reads
// its files at each decryption, so it is made once.
func (o clusterOptions) keyring() (*secretfile.Keyring, error) {
	if len(o.KeyFiles) == 0 {
		return nil, nil
	}
	k, err := secretfile.NewKeyring(o.KeyFiles...)
	if err != nil {
		return nil, fmt.Errorf("--sops-key-file (ADDON_OPERATOR_SOPS_KEY_FILE): %w", err)
	}
	return k, nil
}

// settings are the loader's (loader.WithClusterConfig) with keyring; nil
// when the config in git is off. preview reads encrypted values as
// placeholders when there is no keyring.
func (o clusterOptions) settings(keyring *secretfile.Keyring, preview bool) (*clusterconfig.Settings, error) {
	if o.Name == "" {
		return nil, nil
	}
	layers, err := o.layers()
	if err != nil {
		return nil, err
	}
	// the operator's own sections: a fleet's rollout and change windows
	// (docs/operator.md, "Fleets")
	return &clusterconfig.Settings{Cluster: o.Name, Layers: layers, Keyring: keyring, Preview: preview && keyring == nil,
		OperatorSections: rollout.Sections}, nil
}

// loaderOptions are the loader's options for the cluster: SOPS-encrypted
// values files decrypted with the key files (loader.WithSecrets: without
// a key refused, or in a preview read as placeholders) and, with a
// cluster name, its config in git. cfg is that config's settings (nil:
// off), for the log.
func (o clusterOptions) loaderOptions(preview bool) (opts []loader.Option, cfg *clusterconfig.Settings, err error) {
	keyring, err := o.keyring()
	if err != nil {
		return nil, nil, err
	}
	opts = []loader.Option{loader.WithSecrets(keyring, preview && keyring == nil)}
	if cfg, err = o.settings(keyring, preview); err != nil {
		return nil, nil, err
	}
	if cfg != nil {
		opts = append(opts, loader.WithClusterConfig(*cfg))
	}
	return opts, cfg, nil
}

// checkoutPaths are the paths the layers read, for the git checkout
// (gitsync.Options.Paths): a file or folder as it is, a glob's folder.
func (o clusterOptions) checkoutPaths() []string {
	if o.Name == "" {
		return nil
	}
	layers, _ := o.layers()
	if len(layers) == 0 {
		layers = []clusterconfig.Layer{{Path: clusterconfig.DefaultPath}}
	}
	var out []string
	for _, l := range layers {
		p := strings.ReplaceAll(l.Path, "{cluster}", o.Name)
		var kept []string
		for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
			if strings.ContainsAny(part, "*?[") {
				break
			}
			kept = append(kept, part)
		}
		if p := path.Clean(strings.Join(kept, "/")); p != "." && p != "" {
			out = append(out, p)
		}
	}
	return out
}
