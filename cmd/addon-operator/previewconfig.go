package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/secretfile"
)

// previewCluster is the cluster a preview is for: start's cluster options
// (its config in the repository, the keys of its SOPS files), with the
// name bound here since start binds it with the commit status options
// (docs/operator.md, "Previews"). Without a key, encrypted values read as
// secretfile.Placeholder and the preview still renders.
type previewCluster struct {
	clusterOptions
}

func (o *previewCluster) bind(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&o.Name, "cluster-name", e.str([]string{"ADDON_OPERATOR_CLUSTER_NAME"}, ""), "preview for this cluster: its config in the repository (--cluster-config) is laid over --values, as the operator lays it over the ConfigMap (env ADDON_OPERATOR_CLUSTER_NAME; empty: --values alone); without --sops-key-file, encrypted values show as "+secretfile.Placeholder)
	o.clusterOptions.bind(fs, e)
}

// loaderOptions are the loader's options for the previewed cluster.
func (o previewCluster) loaderOptions() ([]loader.Option, error) {
	if o.Name == "" {
		if len(o.Config) > 0 {
			return nil, usageError{fmt.Errorf("--cluster-config needs --cluster-name")}
		}
	} else if err := o.checkName(); err != nil {
		return nil, usageError{err}
	}
	if _, err := o.layers(); err != nil {
		return nil, usageError{err}
	}
	opts, _, err := o.clusterOptions.loaderOptions(true)
	return opts, err
}
