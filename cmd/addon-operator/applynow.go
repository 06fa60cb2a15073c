package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/rollout"
)

// newSourceApplyNowCmd is `source apply-now COMMIT`: that commit passes
// the rings and change windows (suspend and the purge guard still hold
// it); the operator records an ApplyNow Event when it lets it through
// (docs/operator.md, "Fleets").
func newSourceApplyNowCmd() *cobra.Command {
	e := &env{}
	var op operatorOptions
	var reason string
	cmd := &cobra.Command{
		Use:   "apply-now COMMIT",
		Short: "Let one commit past the rings and change windows",
		Example: "  addon-operator source apply-now 3f2c9e1 --reason 'hotfix for INC-42'\n" +
			"  kubectl patch configmap addon-operator-source --type merge -p '{\"data\":{\"applyNow\":\"3f2c9e1\"}}'",
		Args: exactArgs(1, "COMMIT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := e.err(); err != nil {
				return err
			}
			commit := strings.ToLower(strings.TrimSpace(args[0]))
			if err := rollout.ValidApplyNow(commit); err != nil {
				return fmt.Errorf("apply-now: %w", err)
			}
			client, err := kubeClient(op.Kube)
			if err != nil {
				return err
			}
			cm := kube.NewConfigMap(client, op.Namespace, op.ConfigMap+sourceSuffix)
			return applyNow(cmd.Context(), cmd.OutOrStdout(), cm, commit, reason, whoAmI(cmd.Context(), client), time.Now())
		},
	}
	op.bind(cmd.Flags(), e)
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ApplyNow Event")
	return cmd
}

// applyNow writes the apply-now keys of the source ConfigMap.
func applyNow(ctx context.Context, w io.Writer, cm *kube.ConfigMap, commit, reason, who string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _, err := cm.Update(ctx, func(d map[string]string) (map[string]string, error) {
		d[sourceApplyNowKey] = commit
		d[sourceApplyNowAtKey] = now.UTC().Format(time.RFC3339)
		setOrDelete(d, sourceApplyNowByKey, who)
		setOrDelete(d, sourceApplyNowReasonKey, reason)
		return d, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ConfigMap %s: applyNow = %s; rings and change windows do not hold that commit (suspend and the purge guard still do)\n", cm.Name(), commit)
	return nil
}
