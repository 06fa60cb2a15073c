package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/lifecycle"
)

// commitStatusOptions are the commit status settings (docs/operator.md,
// "Commit status"); off without a provider.
type commitStatusOptions struct {
	Provider string // github, gitea, forgejo, gitlab, webhook; "": off
	// URL is the API's root (github, gitea, forgejo, gitlab) or the
	// webhook's address.
	URL string
	// Repository is owner/name, or GitLab's project id or path; by
	// default GIT_URL's path.
	Repository            string
	TokenFile, SecretFile string
	// ReadTokenFile is the token the rollout reads statuses with
	// (default: TokenFile).
	ReadTokenFile string
	TargetURL     string
	PerModule     bool
	Cluster       string
	// AllowHTTP are the hosts URL may name with http://: credentials
	// travel in clear to them (docs/security.md, "Credentials")
	AllowHTTP []string
}

func (o *commitStatusOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&o.Provider, "commit-status-provider", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_PROVIDER"}, ""), "post each revision's state to its commit: github, gitea, forgejo, gitlab or webhook (env ADDON_OPERATOR_COMMIT_STATUS_PROVIDER; default: off)")
	fs.StringVar(&o.URL, "commit-status-url", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_URL"}, ""), "the forge's API root (https://host/api/v1 for Gitea and Forgejo, https://host/api/v4 for GitLab) or the webhook's URL (env ADDON_OPERATOR_COMMIT_STATUS_URL; default: GitHub's or gitlab.com's API)")
	fs.StringVar(&o.Repository, "commit-status-repository", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY"}, ""), "owner/name, or the GitLab project's id or path (env ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY; default: from GIT_URL)")
	fs.StringVar(&o.TokenFile, "commit-status-token-file", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_TOKEN_FILE"}, ""), "file with the forge's API token; for a webhook, an optional bearer token (env ADDON_OPERATOR_COMMIT_STATUS_TOKEN_FILE)")
	fs.StringVar(&o.ReadTokenFile, "commit-status-read-token-file", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_READ_TOKEN_FILE"}, ""), "file with a token that reads commit statuses, for a fleet's rings (env ADDON_OPERATOR_COMMIT_STATUS_READ_TOKEN_FILE; default: the commit status token file)")
	fs.StringVar(&o.SecretFile, "commit-status-secret-file", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_SECRET_FILE"}, ""), "file with the HMAC key that signs webhook bodies (env ADDON_OPERATOR_COMMIT_STATUS_SECRET_FILE)")
	fs.StringVar(&o.TargetURL, "commit-status-target-url", e.str([]string{"ADDON_OPERATOR_COMMIT_STATUS_TARGET_URL"}, ""), "the link of every status, e.g. a dashboard (env ADDON_OPERATOR_COMMIT_STATUS_TARGET_URL)")
	fs.BoolVar(&o.PerModule, "commit-status-per-module", e.boolean("ADDON_OPERATOR_COMMIT_STATUS_PER_MODULE", false), "a status per module as well as the revision's (env ADDON_OPERATOR_COMMIT_STATUS_PER_MODULE=true)")
	fs.StringSliceVar(&o.AllowHTTP, "commit-status-allow-http-hosts", e.list("ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS", nil), "hosts (host or host:port) the commit status URL may reach over plain http; https only otherwise (env ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS, comma-separated)")
	fs.StringVar(&o.Cluster, "cluster-name", e.str([]string{"ADDON_OPERATOR_CLUSTER_NAME"}, ""), clusterNameUsage)
}

// provider makes the configured provider; nil when commit status is off.
func (o commitStatusOptions) provider(gitURL string) (commitstatus.Provider, error) {
	kind := strings.ToLower(o.Provider)
	if kind == "" {
		return nil, nil
	}
	if gitURL == "" {
		return nil, fmt.Errorf("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=%s: commit statuses need GIT_URL (without git there is no commit)", o.Provider)
	}
	repo := o.Repository
	if repo == "" && kind != "webhook" {
		var err error
		if repo, err = commitstatus.RepositoryFromURL(gitURL); err != nil {
			return nil, fmt.Errorf("commit status: %w; set ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY", err)
		}
	}
	var (
		p   commitstatus.Provider
		err error
	)
	switch kind {
	case "github", "gitea", "forgejo":
		if kind != "github" && o.URL == "" {
			return nil, fmt.Errorf("commit status provider %s: set ADDON_OPERATOR_COMMIT_STATUS_URL to its API, https://<host>/api/v1", kind)
		}
		p, err = commitstatus.NewGitHub(commitstatus.GitHubOptions{BaseURL: o.URL, Repository: repo, TokenFile: o.TokenFile, AllowHTTP: o.AllowHTTP})
	case "gitlab":
		p, err = commitstatus.NewGitLab(commitstatus.GitLabOptions{BaseURL: o.URL, Project: repo, TokenFile: o.TokenFile, AllowHTTP: o.AllowHTTP})
	case "webhook":
		if repo == "" {
			repo, _ = commitstatus.RepositoryFromURL(gitURL) // informative only
		}
		p, err = commitstatus.NewWebhook(commitstatus.WebhookOptions{URL: o.URL, Repository: repo, TokenFile: o.TokenFile, SecretFile: o.SecretFile, AllowHTTP: o.AllowHTTP})
	default:
		return nil, fmt.Errorf("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=%q: want github, gitea, forgejo, gitlab or webhook", o.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("commit status (%s): %w", kind, err)
	}
	return p, nil
}

// lister reads the forge's commit statuses, for a fleet's rings, with the
// read token (default: the commit status token); nil when the provider
// cannot be read (none, or a webhook).
func (o commitStatusOptions) lister(gitURL string) (commitstatus.Lister, error) {
	switch strings.ToLower(o.Provider) {
	case "github", "gitea", "forgejo", "gitlab":
	default:
		if o.ReadTokenFile != "" {
			return nil, fmt.Errorf("ADDON_OPERATOR_COMMIT_STATUS_READ_TOKEN_FILE: the commit status provider %q has no statuses to read; want github, gitea, forgejo or gitlab", o.Provider)
		}
		return nil, nil
	}
	if o.ReadTokenFile != "" {
		o.TokenFile = o.ReadTokenFile
	}
	p, err := o.provider(gitURL)
	if err != nil {
		return nil, err
	}
	l, _ := p.(commitstatus.Lister)
	return l, nil
}

// notifier makes the Notifier of the settings; nil when off.
func (o commitStatusOptions) notifier(gitURL string, logger *slog.Logger) (*commitstatus.Notifier, error) {
	p, err := o.provider(gitURL)
	if p == nil || err != nil {
		return nil, err
	}
	return commitstatus.New(commitstatus.Options{Provider: p, Cluster: o.Cluster, PerModule: o.PerModule,
		TargetURL: o.TargetURL, Logger: logger.With("component", "commit-status")})
}

// revisionStates hands the operator's revision states to r.
func revisionStates(r commitstatus.Reporter) func(lifecycle.RevisionState) {
	return func(s lifecycle.RevisionState) {
		state := commitstatus.Applying
		switch s.State {
		case lifecycle.RevisionApplied:
			state = commitstatus.Applied
		case lifecycle.RevisionFailed:
			state = commitstatus.Failed
		}
		r.Report(commitstatus.Report{Commit: s.Commit, Module: s.Module, State: state, Reason: s.Reason})
	}
}
