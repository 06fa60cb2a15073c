package main

import (
	"fmt"
	"path"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/secretfile"
)

// previewCluster is the cluster a preview is for: its config in the
// repository and the keys of its SOPS files, with start's flag names and
// environment (docs/operator.md, "Previews"). Without a key, encrypted
// values read as secretfile.Placeholder and the preview still renders.
type previewCluster struct {
	Name     string
	Config   []string
	KeyFiles []string
}

func (o *previewCluster) bind(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&o.Name, "cluster-name", e.str([]string{"ADDON_OPERATOR_CLUSTER_NAME"}, ""), "preview for this cluster: its config in the repository (--cluster-config) is laid over --values, as the operator lays it over the ConfigMap (env ADDON_OPERATOR_CLUSTER_NAME; empty: --values alone)")
	fs.StringSliceVar(&o.Config, "cluster-config", e.list("ADDON_OPERATOR_CLUSTER_CONFIG", nil), "where the cluster's config is in the repository: comma-separated files, globs or folders (with a trailing /), later over earlier, {cluster} replaced, each prefixed optional: when it may name nothing (env ADDON_OPERATOR_CLUSTER_CONFIG; default "+clusterconfig.DefaultPath+")")
	var keys []string
	for _, n := range []string{"ADDON_OPERATOR_SOPS_KEY_FILE", "SOPS_AGE_KEY_FILE"} {
		if keys = e.list(n, nil); keys != nil {
			break
		}
	}
	fs.StringSliceVar(&o.KeyFiles, "sops-key-file", keys, "comma-separated files or directories of age identities or armored PGP private keys that decrypt SOPS-encrypted files; without one, encrypted values show as "+secretfile.Placeholder+" (env ADDON_OPERATOR_SOPS_KEY_FILE, SOPS_AGE_KEY_FILE)")
}

// loaderOptions are the loader's options for the cluster: its config (with
// a cluster name) and SOPS values files, decrypted with the key files or
// previewed with placeholders.
func (o previewCluster) loaderOptions() ([]loader.Option, error) {
	var keyring *secretfile.Keyring
	if len(o.KeyFiles) > 0 {
		var err error
		if keyring, err = secretfile.NewKeyring(o.KeyFiles...); err != nil {
			return nil, fmt.Errorf("--sops-key-file: %w", err)
		}
	}
	opts := []loader.Option{loader.WithSecrets(keyring, keyring == nil)}
	if o.Name == "" {
		if len(o.Config) > 0 {
			return nil, usageError{fmt.Errorf("--cluster-config needs --cluster-name")}
		}
		return opts, nil
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return nil, usageError{fmt.Errorf("--cluster-name %q: want a DNS name: %s", o.Name, strings.Join(errs, "; "))}
	}
	layers, err := o.layers()
	if err != nil {
		return nil, err
	}
	s := clusterconfig.Settings{Cluster: o.Name, Layers: layers, Keyring: keyring, Preview: keyring == nil}
	return append(opts, loader.WithClusterConfig(s)), nil
}

func (o previewCluster) layers() ([]clusterconfig.Layer, error) {
	var out []clusterconfig.Layer
	for _, c := range o.Config {
		p, optional := strings.CutPrefix(c, "optional:")
		if p = strings.TrimSpace(p); p == "" {
			return nil, usageError{fmt.Errorf("--cluster-config %q: an empty layer", c)}
		}
		out = append(out, clusterconfig.Layer{Path: p, Optional: optional})
	}
	return out, nil
}

// checkoutPaths are the paths a ref's checkout needs for the layers: a
// file or folder as it is, a glob's folder ("." for a glob at the root:
// the whole tree).
func (o previewCluster) checkoutPaths() []string {
	if o.Name == "" {
		return nil
	}
	layers, _ := o.layers()
	if len(layers) == 0 {
		layers = []clusterconfig.Layer{{Path: clusterconfig.DefaultPath}}
	}
	var out []string
	for _, l := range layers {
		var kept []string
		for _, part := range strings.Split(strings.Trim(strings.ReplaceAll(l.Path, "{cluster}", o.Name), "/"), "/") {
			if strings.ContainsAny(part, "*?[") {
				break
			}
			kept = append(kept, part)
		}
		p := path.Clean(strings.Join(kept, "/"))
		if p == "." || p == "" {
			return []string{"."}
		}
		out = append(out, p)
	}
	return out
}
