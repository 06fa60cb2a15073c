package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/gitsync"
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

const sourceUsage = `usage:
  addon-operator source set-ref REF   set the ref the operator follows (write '' to go back to GIT_REF)
  addon-operator source confirm-purge COMMIT
                                      let that revision purge more modules than ADDON_OPERATOR_PURGE_LIMIT allows
  addon-operator source status        show the desired ref, the running revision and recent revisions`

func sourceCommand(args []string) error {
	if len(args) == 0 {
		return errors.New(sourceUsage)
	}
	switch args[0] {
	case "set-ref":
		return setRef(args[1:])
	case "confirm-purge":
		return confirmPurge(args[1:])
	case "status":
		return sourceStatus(args[1:], os.Stdout)
	}
	return fmt.Errorf("unknown source command %q\n%s", args[0], sourceUsage)
}

func setRef(args []string) error {
	cm, ref, err := sourceArg("set-ref REF", args)
	if err != nil {
		return err
	}
	if err := updateSource(cm, sourceRefKey, ref); err != nil {
		return err
	}
	if ref == "" {
		fmt.Printf("ConfigMap %s: ref removed; the operator follows GIT_REF again\n", cm.Name())
	} else {
		fmt.Printf("ConfigMap %s: ref = %s; the operator syncs to it now\n", cm.Name(), ref)
	}
	return nil
}

// confirmPurge lets one commit purge more modules than
// ADDON_OPERATOR_PURGE_LIMIT allows (docs/operator.md, "Purge guard").
func confirmPurge(args []string) error {
	cm, commit, err := sourceArg("confirm-purge COMMIT", args)
	if err != nil {
		return err
	}
	if !shaRe.MatchString(commit) {
		return fmt.Errorf("confirm-purge: %q is not a full commit SHA (see treeError or purgeError in /status)", commit)
	}
	if err := updateSource(cm, sourceConfirmPurgeKey, commit); err != nil {
		return err
	}
	fmt.Printf("ConfigMap %s: confirmPurge = %s; that revision may now purge its removed modules\n", cm.Name(), commit)
	return nil
}

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

// sourceArg parses a source subcommand's settings and its one argument,
// and returns the source ConfigMap.
func sourceArg(usage string, args []string) (*kube.ConfigMap, string, error) {
	fs := flag.NewFlagSet("source "+strings.Fields(usage)[0], flag.ContinueOnError)
	e := &env{}
	var op operatorOptions
	op.bind(fs, e)
	if err := parse(fs, e, args); err != nil {
		return nil, "", err
	}
	if fs.NArg() != 1 {
		return nil, "", errors.New("usage: addon-operator source " + usage)
	}
	cfg, err := restConfig(op.Kube)
	if err != nil {
		return nil, "", err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return kube.NewConfigMap(client, op.Namespace, op.ConfigMap+sourceSuffix), fs.Arg(0), nil
}

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

// sourceStatus asks the running operator, found through the listen
// address it was started with (or --address), for /status.
func sourceStatus(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("source status", flag.ContinueOnError)
	e := &env{}
	var listen listenOptions
	listen.bind(fs, e)
	addr := fs.String("address", "", "the operator's HTTP address, http://host:port (default: from the listen address settings; kubectl port-forward to reach a pod)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, e, args); err != nil {
		return err
	}
	base, how, err := operatorURL(*addr, listen)
	if err != nil {
		return err
	}
	body, err := askOperator(base, how, "/status")
	if err != nil {
		return err
	}
	var st struct {
		Source   *gitsync.Status `json:"source"`
		Revision string          `json:"revision"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("read /status: %w", err)
	}
	if st.Source == nil {
		return errors.New("the operator runs without git (no GIT_URL)")
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(st.Source)
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
	fmt.Fprintln(out, "revisions (newest first):")
	for _, r := range s.History {
		fmt.Fprintf(out, "  %s  %s  %-12s %s\n", r.AppliedAt.Format(time.RFC3339), r.Commit[:12], r.Ref, r.Subject)
	}
	return nil
}
