package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/kube"
)

// The `source suspend`, `source resume` and `source sync` commands: they
// write the source ConfigMap's keys (suspend.go) with the operator's
// kubeconfig and namespace settings, as set-ref does.

func newSourceSuspendCmd() *cobra.Command {
	var reason string
	return sourceCtlCmd("suspend", "Hold new revisions and drift correction until `source resume`",
		"  addon-operator source suspend --reason 'release freeze until Monday'\n  kubectl patch configmap addon-operator-source --type merge -p '{\"data\":{\"suspended\":\"true\"}}'",
		func(fs *pflag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why, shown on /status, the Event and the held commits' statuses")
		},
		func(ctx context.Context, w io.Writer, client kubernetes.Interface, cm *kube.ConfigMap) error {
			return suspendSource(ctx, w, cm, reason, whoAmI(ctx, client), time.Now())
		})
}

func newSourceResumeCmd() *cobra.Command {
	return sourceCtlCmd("resume", "End a suspension: the newest revision applies at once",
		"  addon-operator source resume", nil,
		func(ctx context.Context, w io.Writer, client kubernetes.Interface, cm *kube.ConfigMap) error {
			return resumeSource(ctx, w, cm, whoAmI(ctx, client), time.Now())
		})
}

func newSourceSyncCmd() *cobra.Command {
	var timeout time.Duration
	return sourceCtlCmd("sync", "Fetch now, as the git webhook does, and wait until the operator has",
		"  addon-operator source sync\n  addon-operator source sync --timeout 0   # ask, do not wait",
		func(fs *pflag.FlagSet) {
			fs.DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the operator's answer (0: do not wait)")
		},
		func(ctx context.Context, w io.Writer, _ kubernetes.Interface, cm *kube.ConfigMap) error {
			return syncSource(ctx, w, cm, timeout, time.Now())
		})
}

// sourceCtlCmd is a source subcommand without arguments that edits the
// source ConfigMap, found through the operator's settings.
func sourceCtlCmd(use, short, example string, flags func(*pflag.FlagSet),
	do func(ctx context.Context, w io.Writer, client kubernetes.Interface, cm *kube.ConfigMap) error) *cobra.Command {
	e := &env{}
	var op operatorOptions
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example, Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := e.err(); err != nil {
				return err
			}
			client, err := kubeClient(op.Kube)
			if err != nil {
				return err
			}
			return do(cmd.Context(), cmd.OutOrStdout(), client, kube.NewConfigMap(client, op.Namespace, op.ConfigMap+sourceSuffix))
		},
	}
	op.bind(cmd.Flags(), e)
	if flags != nil {
		flags(cmd.Flags())
	}
	return cmd
}

// whoAmI is the API server's name for the caller (SelfSubjectReview), ""
// when it cannot tell: recorded as suspendedBy or resumedBy.
func whoAmI(ctx context.Context, client kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}

// suspendSource writes the suspension; a second suspend keeps its start
// and who, and changes the reason.
func suspendSource(ctx context.Context, w io.Writer, cm *kube.ConfigMap, reason, who string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	already := false
	data, _, err := cm.Update(ctx, func(d map[string]string) (map[string]string, error) {
		already = suspendedIn(d, now) != nil
		if !already || d[sourceSuspendedAtKey] == "" {
			d[sourceSuspendedAtKey] = now.UTC().Format(time.RFC3339)
			setOrDelete(d, sourceSuspendedByKey, who)
		}
		d[sourceSuspendedKey] = "true"
		setOrDelete(d, sourceSuspendReasonKey, reason)
		delete(d, sourceResumedAtKey)
		delete(d, sourceResumedByKey)
		return d, nil
	})
	if err != nil {
		return err
	}
	if already {
		fmt.Fprintf(w, "ConfigMap %s: already suspended since %s; reason now %q\n", cm.Name(), data[sourceSuspendedAtKey], reason)
		return nil
	}
	fmt.Fprintf(w, "ConfigMap %s: suspended; new revisions are fetched and held, drift is reported and not corrected, until `addon-operator source resume`\n", cm.Name())
	return nil
}

// resumeSource removes the suspension and records who resumed.
func resumeSource(ctx context.Context, w io.Writer, cm *kube.ConfigMap, who string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	was := false
	_, _, err := cm.Update(ctx, func(d map[string]string) (map[string]string, error) {
		was = suspendedIn(d, now) != nil
		if !was {
			return d, nil
		}
		for _, k := range []string{sourceSuspendedKey, sourceSuspendReasonKey, sourceSuspendedAtKey, sourceSuspendedByKey, sourceSuspendedRevKey} {
			delete(d, k)
		}
		d[sourceResumedAtKey] = now.UTC().Format(time.RFC3339)
		setOrDelete(d, sourceResumedByKey, who)
		return d, nil
	})
	if err != nil {
		return err
	}
	if !was {
		fmt.Fprintf(w, "ConfigMap %s: not suspended\n", cm.Name())
		return nil
	}
	fmt.Fprintf(w, "ConfigMap %s: resumed; the newest revision applies now\n", cm.Name())
	return nil
}

// syncSource asks for a sync and waits for the operator's answer: it
// writes syncRequested and watches for syncAnswered to name it.
func syncSource(ctx context.Context, w io.Writer, cm *kube.ConfigMap, timeout time.Duration, now time.Time) error {
	token := now.UTC().Format(time.RFC3339Nano)
	if err := updateSource(cm, sourceSyncRequestedKey, token); err != nil {
		return err
	}
	if timeout <= 0 {
		fmt.Fprintf(w, "ConfigMap %s: sync requested (%s)\n", cm.Name(), token)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answered := make(chan string, 1)
	cm.Watch(ctx, func(d map[string]string, _ string) {
		if d[sourceSyncAnsweredKey] == token {
			select {
			case answered <- d[sourceSyncResultKey]:
			default:
			}
			cancel()
		}
	})
	result := ""
	select {
	case result = <-answered:
	default:
	}
	switch {
	case result == "":
		return fmt.Errorf("ConfigMap %s: sync requested (%s), no answer within %s: is the operator running, with GIT_URL?", cm.Name(), token, timeout)
	case strings.HasPrefix(result, "error: "):
		return errors.New("sync: " + strings.TrimPrefix(result, "error: "))
	}
	fmt.Fprintf(w, "synced: %s\n", result)
	return nil
}

func setOrDelete(d map[string]string, key, value string) {
	if value == "" {
		delete(d, key)
	} else {
		d[key] = value
	}
}

// showHolds prints `source status`'s suspension, held revision and what
// holds it, and since when (docs/operator.md, "Suspend, resume and sync").
func showHolds(out io.Writer, s *sourceView) {
	if p := s.Suspended; p != nil {
		line := "since " + p.Since.Format(time.RFC3339)
		if p.By != "" {
			line += " by " + p.By
		}
		if p.Reason != "" {
			line += ": " + p.Reason
		}
		fmt.Fprintf(out, "suspended:    %s (addon-operator source resume)\n", line)
	}
	if p := s.Pending; p != nil {
		fmt.Fprintf(out, "pending:      %s %s (fetched and checked, not applied)\n", p.Commit, p.Subject)
	}
	for _, h := range s.Held {
		line := "by " + h.By + " since " + h.Since.Format(time.RFC3339)
		if h.Commit != "" {
			line = h.Commit[:min(12, len(h.Commit))] + " " + line
		}
		if h.Reason != "" {
			line += ": " + h.Reason
		}
		fmt.Fprintf(out, "held:         %s\n", line)
	}
	showRollout(out, s)
}
