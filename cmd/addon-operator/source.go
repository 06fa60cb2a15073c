package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/addonops/addon-operator/kube"
)

// The source ConfigMap, <config-map>-source, holds the live ref:
//
//	data:
//	  ref: v1.2.0          # a branch, tag, full ref or commit SHA; absent: GIT_REF
//	  webhookAt: …         # when a standby replica last received a webhook
//	  confirmPurge: <sha>  # the commit allowed past the purge guard
//
// Every replica watches it, and any change makes each one sync at once.
const (
	sourceSuffix          = "-source"
	sourceRefKey          = "ref"
	sourceWebhookKey      = "webhookAt"
	sourceConfirmPurgeKey = "confirmPurge"
)

// relayWebhook passes a webhook that reached a standby replica (the Service
// picks any replica) on to the leader, through the source ConfigMap.
func relayWebhook(ctx context.Context, cm *kube.ConfigMap, logger *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			logger.Error("relaying a webhook panicked", "panic", r)
		}
	}()
	_, _, err := cm.Update(ctx, func(d map[string]string) (map[string]string, error) {
		d[sourceWebhookKey] = time.Now().UTC().Format(time.RFC3339Nano)
		return d, nil
	})
	if err != nil {
		logger.Error("relay a webhook to the leader; it syncs at its next poll", "err", err)
	}
}

func newSourceCmd() *cobra.Command {
	return groupCmd("source", "Show or change the git source of a running operator",
		sourceEditCmd("set-ref REF", "Set the ref the operator follows ('' goes back to GIT_REF)",
			"  addon-operator source set-ref v1.2.0     # roll back by pinning a tag\n  addon-operator source set-ref ''         # follow GIT_REF again",
			setRef),
		sourceEditCmd("confirm-purge COMMIT", "Let that revision purge more modules than ADDON_OPERATOR_PURGE_LIMIT allows",
			"  addon-operator source confirm-purge 3f2c…   # the full SHA that /status names in purgeError",
			confirmPurge),
		newSourceSuspendCmd(),
		newSourceResumeCmd(),
		newSourceSyncCmd(),
		newSourceApplyNowCmd(),
		newSourceStatusCmd(),
	)
}

// sourceEditCmd is a source subcommand that writes one key of the source
// ConfigMap: it finds the ConfigMap through the operator's settings.
func sourceEditCmd(use, short, example string, edit func(w io.Writer, cm *kube.ConfigMap, arg string) error) *cobra.Command {
	e := &env{}
	var op operatorOptions
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    exactArgs(1, strings.Fields(use)[1]),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := e.err(); err != nil {
				return err
			}
			client, err := kubeClient(op.Kube)
			if err != nil {
				return err
			}
			return edit(cmd.OutOrStdout(), kube.NewConfigMap(client, op.Namespace, op.ConfigMap+sourceSuffix), args[0])
		},
	}
	op.bind(cmd.Flags(), e)
	return cmd
}

func setRef(w io.Writer, cm *kube.ConfigMap, ref string) error {
	if err := updateSource(cm, sourceRefKey, ref); err != nil {
		return err
	}
	if ref == "" {
		fmt.Fprintf(w, "ConfigMap %s: ref removed; the operator follows GIT_REF again\n", cm.Name())
	} else {
		fmt.Fprintf(w, "ConfigMap %s: ref = %s; the operator syncs to it now\n", cm.Name(), ref)
	}
	return nil
}

// confirmPurge lets one commit purge more modules than
// ADDON_OPERATOR_PURGE_LIMIT allows (docs/operator.md, "Purge guard").
func confirmPurge(w io.Writer, cm *kube.ConfigMap, commit string) error {
	if !shaRe.MatchString(commit) {
		return fmt.Errorf("confirm-purge: %q is not a full commit SHA (see treeError or purgeError in /status)", commit)
	}
	if err := updateSource(cm, sourceConfirmPurgeKey, commit); err != nil {
		return err
	}
	fmt.Fprintf(w, "ConfigMap %s: confirmPurge = %s; that revision may now purge its removed modules\n", cm.Name(), commit)
	return nil
}

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

// updateSource sets key in the source ConfigMap ("" removes it).
func updateSource(cm *kube.ConfigMap, key, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := cm.Update(ctx, func(d map[string]string) (map[string]string, error) {
		if value == "" {
			delete(d, key)
		} else {
			d[key] = value
		}
		return d, nil
	})
	return err
}

// sourceStatus runs `source status` on args.
func sourceStatus(args []string, out io.Writer) error {
	return run(newSourceStatusCmd(), args, out)
}

func newSourceStatusCmd() *cobra.Command {
	var ask askOptions
	var output string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Show the desired ref, the running revision and recent revisions",
		Example: "  addon-operator source status\n  addon-operator source status -o json --address http://127.0.0.1:9115",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				output = "json"
			}
			if err := checkOutput(&output, "table", "json", "yaml"); err != nil {
				return err
			}
			return showSource(cmd.OutOrStdout(), ask, output)
		},
	}
	ask.bind(cmd.Flags())
	outputFlag(cmd.Flags(), &output, "table", "json", "yaml")
	cmd.Flags().BoolVar(&asJSON, "json", false, "the same as -o json")
	_ = cmd.Flags().MarkHidden("json")
	return cmd
}

// showSource prints the source part of the operator's /status.
func showSource(out io.Writer, ask askOptions, output string) error {
	base, how, err := ask.url()
	if err != nil {
		return err
	}
	body, err := askOperator(base, how, "/status")
	if err != nil {
		return err
	}
	var st struct {
		Source      *sourceView `json:"source"`
		Revision    string      `json:"revision"`
		ConfigFiles []string    `json:"configFiles"`
		ConfigDrift []struct {
			Key, Path, File string
		} `json:"configDrift"`
		ClusterKeys []string `json:"clusterKeys"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("read /status: %w", err)
	}
	if st.Source == nil {
		return errors.New("the operator runs without git (no GIT_URL)")
	}
	if done, err := writeData(out, output, st.Source); done {
		return err
	}
	s := st.Source
	ref := s.DesiredRef
	if ref == "" {
		ref = "(the remote's HEAD)"
	}
	fmt.Fprintf(out, "source:       %s\ndesired ref:  %s\n", s.URL, ref)
	if c := s.Current; c != nil {
		fmt.Fprintf(out, "commit:       %s\n  subject:    %s\n  author:     %s\n  time:       %s\n", c.Commit, c.Subject, c.Author, c.Time.Format(time.RFC3339))
	}
	if st.Revision != "" && (s.Current == nil || st.Revision != s.Current.Commit) {
		fmt.Fprintf(out, "running:      %s (the operator has not adopted the newest commit yet)\n", st.Revision)
	}
	if !s.LastSync.IsZero() {
		fmt.Fprintf(out, "last sync:    %s\n", s.LastSync.Format(time.RFC3339))
	}
	if s.LastError != "" {
		fmt.Fprintf(out, "last error:   %s\n", s.LastError)
	}
	showHolds(out, s)
	// the running revision's config in git and what the ConfigMap sets
	// over it (docs/operator.md, "Config in git")
	if len(st.ConfigFiles) > 0 {
		fmt.Fprintf(out, "config files: %s\n", strings.Join(st.ConfigFiles, ", "))
	}
	for _, d := range st.ConfigDrift {
		key := d.Key
		if d.Path != "" {
			key += "." + d.Path
		}
		fmt.Fprintf(out, "config drift: %s (the ConfigMap's value is not applied; %s sets it)\n", key, d.File)
	}
	if len(st.ClusterKeys) > 0 {
		fmt.Fprintf(out, "from the cluster: %s (git does not set them; a rollback by ref keeps them)\n", strings.Join(st.ClusterKeys, ", "))
	}
	fmt.Fprintln(out, "revisions (newest first):")
	for _, r := range s.History {
		fmt.Fprintf(out, "  %s  %s  %-12s %s\n", r.AppliedAt.Format(time.RFC3339), r.Commit[:12], r.Ref, r.Subject)
	}
	return nil
}
