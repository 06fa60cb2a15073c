package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/internal/forgetest"
	"github.com/addonops/addon-operator/internal/gitserver"
)

// statesOf is what the forge holds for one commit and context, oldest first.
func statesOf(forge *forgetest.Server, commit, context string) []string {
	var out []string
	for _, s := range forge.Statuses() {
		if s.Commit == commit && s.Context == context {
			out = append(out, s.State)
		}
	}
	return out
}

// TestCommitStatus: each revision the operator applies reaches the forge
// as pending then success, then its health once settled, once per state,
// for the revision and (per module on) for its module; a revision whose hook fails gets failure
// naming the hook, never what it printed; a fix gets success again.
func TestCommitStatus(t *testing.T) {
	tests := []struct {
		provider string
		env      func(f *forgetest.Server) []string
		pending  string // the provider's name of the pending state
		success  string
		failure  string
		healthy  string // the revision's health once settled
		broken   bool   // also push a broken hook and its fix
	}{
		{"github", func(f *forgetest.Server) []string {
			return []string{"ADDON_OPERATOR_COMMIT_STATUS_URL=" + f.GitHubURL(), "ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons"}
		}, "pending", "success", "failure", "success", true},
		{"gitlab", func(f *forgetest.Server) []string {
			return []string{"ADDON_OPERATOR_COMMIT_STATUS_URL=" + f.GitLabURL(), "ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/sub/addons"}
		}, "running", "success", "failed", "success", false},
		{"webhook", func(f *forgetest.Server) []string {
			f.Secret = "hmac-key"
			secret := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(secret, []byte("hmac-key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"ADDON_OPERATOR_COMMIT_STATUS_URL=" + f.WebhookURL(), "ADDON_OPERATOR_COMMIT_STATUS_SECRET_FILE=" + secret}
		}, "applying", "applied", "failed", "healthy", false},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			f := newForgeSetup(t, "cstatus-"+tt.provider)
			ns, repo, c1, forge := f.ns, f.repo, f.c1, f.forge
			_, logPath := operator(t, append(f.env("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER="+tt.provider), tt.env(forge)...)...)

			const revision, module = "addon-operator/test", "addon-operator/test/alpha"
			wantStates := func(commit, context string, want ...string) {
				t.Helper()
				eventually(t, fmt.Sprintf("%s %s: %v", commit[:8], context, want), func() bool {
					return slices.Equal(statesOf(forge, commit, context), want)
				})
			}
			// wantHealthy: applied then healthy, or healthy alone when the
			// module was already Healthy as the revision was applied (the
			// notifier posts only the newest waiting state of a context)
			wantHealthy := func(commit, context string, before ...string) {
				t.Helper()
				long, short := append(slices.Clone(before), tt.success, tt.healthy), append(slices.Clone(before), tt.healthy)
				eventually(t, fmt.Sprintf("%s %s: %v or %v", commit[:8], context, long, short), func() bool {
					got := statesOf(forge, commit, context)
					return slices.Equal(got, long) || slices.Equal(got, short)
				})
			}
			// applied, then healthy once the module's objects are Current
			// (docs/operator.md, "Commit status")
			wantHealthy(c1, revision, tt.pending)
			wantHealthy(c1, module)

			if tt.broken {
				// a hook that fails on every run: failure, once, naming the hook
				c2 := commitFiles(t, repo, "broken hook", merged(alphaOn("2"), alphaHook("echo leaked-hook-output >&2; exit 1")))
				wantStates(c2, revision, tt.pending, tt.failure)
				wantStates(c2, module, tt.failure)
				for _, s := range forge.Statuses() {
					if s.Commit == c2 && s.Context == revision && s.State == tt.failure &&
						s.Description != "failed on test: module alpha: hook 001-alpha/hooks/h.sh (beforeHelm): exited 1" {
						t.Fatalf("failure description = %q", s.Description)
					}
				}
				// the fix: success; the broken revision's failure stays as it was
				c3 := commitFiles(t, repo, "fixed hook", merged(alphaOn("3"), alphaHook("exit 0")))
				eventually(t, "alpha v3", func() bool { return cmValue(ns, "001-alpha-cm") == "3" })
				wantHealthy(c3, revision, tt.pending)
				wantHealthy(c3, module)
				wantStates(c2, revision, tt.pending, tt.failure)
			}

			all, _ := json.Marshal(forge.Statuses())
			logs, _ := os.ReadFile(logPath)
			if strings.Contains(string(all), "leaked-hook-output") {
				t.Fatal("a hook's output reached the forge")
			}
			if strings.Contains(string(logs), "forge-t0ken") || strings.Contains(string(logs), "hmac-key") {
				t.Fatal("a credential reached the log")
			}
			if tt.provider == "webhook" {
				var body commitstatus.WebhookBody
				if err := json.Unmarshal(forge.Statuses()[0].Body, &body); err != nil {
					t.Fatal(err)
				}
				if body.Repository != "addons" && body.Repository != "" || body.Cluster != "test" || body.Outcome != "pending" {
					t.Fatalf("webhook body = %+v", body)
				}
			}
		})
	}
}

// TestCommitStatusSettings: a bad commit status setting stops start-up
// with an error naming it.
func TestCommitStatusSettings(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		o      commitStatusOptions
		gitURL string
		want   string
	}{
		{commitStatusOptions{}, "", ""},
		{commitStatusOptions{Provider: "github", TokenFile: token}, "", "need GIT_URL"},
		{commitStatusOptions{Provider: "bitbucket", TokenFile: token}, "https://h/o/r.git", "want github, gitea, forgejo, gitlab or webhook"},
		{commitStatusOptions{Provider: "github", TokenFile: token}, "https://h/addons.git", "ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY"},
		{commitStatusOptions{Provider: "gitea", TokenFile: token}, "https://h/o/r.git", "ADDON_OPERATOR_COMMIT_STATUS_URL"},
		{commitStatusOptions{Provider: "github"}, "https://h/o/r.git", "token file"},
		{commitStatusOptions{Provider: "github", TokenFile: token}, "git@github.com:o/r.git", ""},
		{commitStatusOptions{Provider: "gitlab", TokenFile: token}, "https://gitlab.com/g/s/r.git", ""},
		{commitStatusOptions{Provider: "webhook"}, "https://h/o/r.git", "webhook URL"},
		{commitStatusOptions{Provider: "gitea", TokenFile: token, URL: "http://h/api/v1"}, "https://h/o/r.git", "ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS"},
		{commitStatusOptions{Provider: "gitea", TokenFile: token, URL: "http://h/api/v1", AllowHTTP: []string{"h"}}, "https://h/o/r.git", ""},
	}
	for _, tt := range tests {
		_, err := tt.o.provider(tt.gitURL)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v with %q: err = %v, want %q", tt.o, tt.gitURL, err, tt.want)
		}
	}
}

// TestCommitStatusRefusedTree: a commit whose tree the git syncer refuses
// (a values.yaml that does not parse) gets failure, once, naming the file
// and the module, and no other state; the running commit keeps its
// states; the fix gets pending then success.
func TestCommitStatusRefusedTree(t *testing.T) {
	f := newForgeSetup(t, "cstatus-refused")
	ns, repo, c1, forge := f.ns, f.repo, f.c1, f.forge
	operator(t, f.env("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=github",
		"ADDON_OPERATOR_COMMIT_STATUS_URL="+forge.GitHubURL(), "ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons")...)

	const revision, module = "addon-operator/test", "addon-operator/test/alpha"
	// c1 applied and settled: its last status says healthy (applied may
	// come before it, or be replaced by it in the queue)
	settled := func(commit string) bool {
		var last forgetest.Status
		for _, s := range forge.Statuses() {
			if s.Commit == commit && s.Context == revision {
				last = s
			}
		}
		return last.State == "success" && strings.HasPrefix(last.Description, "healthy on test")
	}
	eventually(t, "c1 applied and healthy", func() bool { return settled(c1) })
	before := statesOf(forge, c1, revision)

	c2 := commitFiles(t, repo, "broken values", merged(alphaOn("2"), map[string]string{
		"modules/001-alpha/values.yaml": "alpha: [v: leaked-value\n"}))
	eventually(t, "c2 failure", func() bool { return len(statesOf(forge, c2, revision)) > 0 })
	// the syncer refuses it on every poll (200 ms): still one failure
	time.Sleep(2 * time.Second)
	if got := statesOf(forge, c2, revision); !slices.Equal(got, []string{"failure"}) {
		t.Fatalf("c2 states = %v, want [failure]", got)
	}
	const want = "failed on test: module alpha: modules/001-alpha/values.yaml does not load; the previous revision keeps running (see /status)"
	for _, s := range forge.Statuses() {
		if s.Commit == c2 && s.Description != want {
			t.Fatalf("c2 %s description = %q, want %q", s.Context, s.Description, want)
		}
	}
	if got := statesOf(forge, c2, module); len(got) != 0 {
		t.Fatalf("c2 module states = %v, want none", got)
	}
	if got := statesOf(forge, c1, revision); !slices.Equal(got, before) {
		t.Fatalf("c1 states = %v, want %v as before", got, before)
	}

	c3 := commitFiles(t, repo, "fixed values", alphaOn("3"))
	eventually(t, "alpha v3", func() bool { return cmValue(ns, "001-alpha-cm") == "3" })
	eventually(t, "c3 applied and healthy", func() bool { return settled(c3) })
	if got := statesOf(forge, c3, revision); got[0] != "pending" {
		t.Fatalf("c3 states = %v, want pending first", got)
	}
	if got := statesOf(forge, c2, revision); !slices.Equal(got, []string{"failure"}) {
		t.Fatalf("c2 states after the fix = %v, want [failure]", got)
	}
	if all, _ := json.Marshal(forge.Statuses()); strings.Contains(string(all), "leaked-value") {
		t.Fatal("the file's content reached the forge")
	}
}

// forgeSetup is a commit-status test's parts: a namespace, a repository
// whose first commit enables alpha, served over HTTP, and a local forge
// with a token file.
type forgeSetup struct {
	ns, c1, token, checkout string
	repo                    *gitserver.Repo
	srv                     *gitserver.HTTPServer
	forge                   *forgetest.Server
}

func newForgeSetup(t *testing.T, name string) *forgeSetup {
	t.Helper()
	f := &forgeSetup{ns: namespace(t, name), checkout: filepath.Join(t.TempDir(), "checkout")}
	root := t.TempDir()
	f.repo = newRepo(t, root)
	f.c1 = commitFiles(t, f.repo, "alpha v1", alphaOn("1"))
	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	f.srv = srv
	f.forge = forgetest.New("forge-t0ken")
	t.Cleanup(f.forge.Close)
	f.token = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f.token, []byte("forge-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// env is the operator's environment: git mode on the repository, commit
// status with the token, per module, on cluster "test", plus more.
func (f *forgeSetup) env(more ...string) []string {
	return append([]string{"ADDON_OPERATOR_NAMESPACE=" + f.ns, "GIT_URL=" + f.srv.URL("addons"), "GIT_REF=main",
		"GIT_POLL_INTERVAL=200ms", "GIT_CHECKOUT_DIR=" + f.checkout,
		"ADDON_OPERATOR_COMMIT_STATUS_TOKEN_FILE=" + f.token,
		"ADDON_OPERATOR_CLUSTER_NAME=test", "ADDON_OPERATOR_CLUSTER_CONFIG=optional:clusters/{cluster}/config.yaml",
		"ADDON_OPERATOR_COMMIT_STATUS_PER_MODULE=true",
		"ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS=127.0.0.1"}, more...)
}
