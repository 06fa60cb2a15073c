package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/webview"
)

// The web view decodes /status into shapes of its own (it imports nothing
// of ours): every field it shows, set in a lifecycle.Status and the git
// source's status as cmd serves them, reaches its page. A renamed JSON
// field fails here, not silently on a page.
func TestWebViewReadsEveryStatusField(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	st := lifecycle.Status{Ready: true, Revision: "c0ffee0000000000000000000000000000000001", TreeError: "tree-error-1", TreeReason: "TreeRefused-1",
		PurgeError: "purge-error-1", ConfigFiles: []string{"clusters/config-file-1.yaml"},
		ConfigDrift: []clusterconfig.Override{{Key: "drift-key-1", Path: "drift-path-1", File: "clusters/drift-file-1.yaml"}},
		Modules: []lifecycle.ModuleStatus{{Name: "alpha", Enabled: true, State: lifecycle.StateFailed, LastError: "last-error-1", Reason: "ReleaseConflict-1",
			Health: &health.ModuleHealth{Status: health.Degraded, Message: "health-message-1", Total: 7, Revision: 42, Since: at,
				Objects: []health.ObjectHealth{{ObjectRef: kube.ObjectRef{Kind: "Deployment", Namespace: "ns-1", Name: "object-1"}, Status: "InProgress", Health: health.Degraded, Message: "object-message-1"}}},
			Drift:     &driftcheck.Status{Mode: "warn-1", Objects: []drift.Object{{Kind: "ConfigMap", Namespace: "ns-2", Name: "drifted-1", Fields: []string{".data.field-1"}, Ignored: []string{".data.ignored-1"}}}},
			Readiness: &runstate.Readiness{Ready: false, Message: "readiness-message-1", Error: "readiness-error-1", Checked: at}},
			{Name: "beta", State: lifecycle.StateDisabled, DisabledReason: "disabled-reason-1"}},
		Queues: []queue.QueueInfo{{Name: "main", Tasks: []queue.TaskInfo{{ID: 9, Kind: "ModuleRun", Description: "task-description-1", Attempts: 3, LastError: "task-error-1", QueuedAt: at, Held: "held-for-1"}}}},
	}
	body := map[string]any{}
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &body)
	body["source"] = sourceView{Status: gitsync.Status{URL: "https://git.example/url-1", DesiredRef: "ref-1", LastSync: at, LastError: "source-error-1",
		Current: &gitsync.Revision{Commit: "c0ffee0000000000000000000000000000000001", Ref: "ref-1", Subject: "subject-1", Author: "author-1", Time: at, AppliedAt: at},
		History: []gitsync.Revision{{Commit: "c0ffee0000000000000000000000000000000002", Ref: "ref-2", Subject: "subject-2", Author: "author-2", Time: at}},
		Pending: &gitsync.Revision{Commit: "c0ffee0000000000000000000000000000000003", Subject: "pending-subject-1"}},
		Suspended: &suspension{Reason: "suspend-reason-1", Since: at, By: "suspended-by-1"},
		Held:      []gitsync.Hold{{By: "suspend", Reason: "hold-reason-1", Since: at, Commit: "c0ffee0000000000000000000000000000000003"}}}
	body["leaderElection"] = map[string]any{"lease": "ns/lease-1", "identity": "me", "leader": "leader-1", "leading": false}
	js, _ := json.Marshal(body)
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(js) })
	h := webview.New(webview.Options{API: api, Guard: lifecycle.LocalOnly, Weights: func() map[string]int { return map[string]int{"alpha": 314} }}).Handler()
	for path, want := range map[string][]string{
		"/ui/": {"tree-error-1", "TreeRefused-1", "purge-error-1", ">314<", "last-error-1", "Degraded", "standby (leader leader-1)", "task-description-1", "suspended: suspend-reason-1", "c0ffee000000 held by suspend", "1 config drift"},
		"/ui/modules/alpha": {"ReleaseConflict-1", "health-message-1", "of 7 objects", "release revision 42", "2026-11-27 10:00:00 UTC", "object-1", "ns-1", "InProgress",
			"object-message-1", "warn-1", "drifted-1", ".data.field-1", ".data.ignored-1", "readiness-message-1", "readiness-error-1", "last-error-1"},
		"/ui/modules/beta": {"disabled-reason-1", "Disabled"},
		"/ui/revision":     {"config-file-1", "lease-1", "url-1", "ref-1", "subject-1", "author-1", "source-error-1", "subject-2", "author-2", "c0ffee000000", "suspended-by-1", "suspend-reason-1", "pending-subject-1", "hold-reason-1", "drift-key-1.drift-path-1", "drift-file-1"},
		"/ui/queues":       {"task-description-1", "task-error-1", "held: held-for-1", ">3<", ">9<"},
	} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		page, _ := io.ReadAll(w.Body)
		for _, s := range want {
			if !strings.Contains(string(page), s) {
				t.Errorf("%s does not show %q", path, s)
			}
		}
	}
}
