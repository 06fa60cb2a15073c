package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/clusterconfig"
)

// newConfigCmd is `config`: the migration of the values ConfigMap into the
// repository (docs/operator.md, "Config in git").
func newConfigCmd() *cobra.Command {
	return groupCmd("config", "Move the values ConfigMap into the repository", newConfigExportCmd())
}

func newConfigExportCmd() *cobra.Command {
	e := &env{}
	var op operatorOptions
	var output string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the live values ConfigMap as a config file to commit (the migration to config in git)",
		Long: `Write the keys of the live values ConfigMap (the one start reads: --namespace, --config-map)
as one config file in its shape: global, module sections, <module>Enabled flags. Commit it as
clusters/NAME/config.yaml (or where --cluster-config says) and start the operator with
--cluster-name NAME: the keys it sets are then git's. Keys that mean nothing to the operator
(empty or null values, binaryData) are left out and named on stderr.

Credentials do not belong in a plain file: move them to a SOPS-encrypted file or to the values
Secret (docs/operator.md, "Secrets") before committing.`,
		Example: `  addon-operator config export --output clusters/prod/config.yaml
  addon-operator config export --namespace addons --config-map addon-operator > config.yaml`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := e.err(); err != nil {
				return err
			}
			client, err := kubeClient(op.Kube)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			return exportConfig(ctx, client, op.Namespace, op.ConfigMap, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	op.bind(cmd.Flags(), e)
	cmd.Flags().StringVar(&output, "output", "", "file to write (default: stdout)")
	return cmd
}

// exportConfig reads the ConfigMap and writes it as a config file to
// output, or to out when output is empty; dropped keys go to errOut.
func exportConfig(ctx context.Context, client kubernetes.Interface, namespace, name, output string, out, errOut io.Writer) error {
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// the operator reads a missing ConfigMap as empty; an export of
		// nothing is more likely a wrong --namespace or --config-map
		return fmt.Errorf("ConfigMap %s/%s not found: nothing to export (see --namespace, --config-map)", namespace, name)
	}
	if err != nil {
		return fmt.Errorf("get ConfigMap %s/%s: %w", namespace, name, err)
	}
	file, dropped, err := clusterconfig.FromConfigMap(cm.Data)
	if err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", namespace, name, err)
	}
	for _, k := range dropped {
		fmt.Fprintf(errOut, "left out key %s: its value is empty or null, which means nothing to the operator\n", k)
	}
	binary := make([]string, 0, len(cm.BinaryData))
	for k := range cm.BinaryData {
		binary = append(binary, k)
	}
	sort.Strings(binary)
	for _, k := range binary {
		fmt.Fprintf(errOut, "left out key %s: binaryData, which the operator does not read\n", k)
	}
	head := fmt.Sprintf("# The values ConfigMap %s/%s, exported by addon-operator config export.\n"+
		"# Commit it as clusters/NAME/config.yaml and set --cluster-name NAME (docs/operator.md, \"Config in git\").\n", namespace, name)
	file = append([]byte(head), file...)
	if output == "" {
		_, err := out.Write(file)
		return err
	}
	if err := os.WriteFile(output, file, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "wrote %d key(s) of ConfigMap %s/%s to %s\n", len(cm.Data)-len(dropped), namespace, name, output)
	return nil
}
