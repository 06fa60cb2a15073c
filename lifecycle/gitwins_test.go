package lifecycle

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/queue"
)

// A ConfigMap edit made while a module's hook hangs reaches the chart once
// the hook stops hanging, although a global schedule hook writes config
// patches every second meanwhile.
func TestEditWhileHookHangs(t *testing.T) {
	t.Parallel()
	hang := filepath.Join(t.TempDir(), "hang")
	e := parallelSetup(t, merged(map[string]string{
		"modules/values.yaml": "slowEnabled: true\n",
		"global-hooks/patcher.sh": recordingHook("patcher", `{"configVersion":"v1","schedule":[{"crontab":"*/1 * * * * *","queue":"ticks"}]}`,
			`echo "[{\"op\":\"add\",\"path\":\"/global/tick\",\"value\":\"$(date +%s%N)\"}]" > "$CONFIG_VALUES_JSON_PATCH_PATH"`),
		"modules/001-slow/hooks/h.sh": "#!/usr/bin/env bash\n" +
			`if [ "${1:-}" = "--config" ]; then echo '{"beforeHelm": 1}'; exit 0; fi` + "\n" +
			`while [ -e ` + hang + ` ]; do sleep 0.1; done` + "\n",
	}, withPrefix("modules/001-slow", moduleChart("slow", "slow"))), map[string]string{"slow": "count: 1\n"})
	e.hookTimeout = 1500 * time.Millisecond
	e.start()
	e.waitReady()
	assertJSON(t, e.releaseValues("slow"), `{"count":1}`)

	if err := os.WriteFile(hang, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cm := kube.NewConfigMap(client, e.ns, e.cmName)
	if _, _, err := cm.Update(t.Context(), func(d map[string]string) (map[string]string, error) {
		d = maps.Clone(d)
		d["slow"] = "count: 2\n"
		return d, nil
	}); err != nil {
		t.Fatal(err)
	}
	// the hook times out a few times while the patcher keeps writing
	ticks := len(e.readRecords())
	e.eventually("the hook to time out twice while the patcher writes", func() bool {
		return e.attempts(taskkind.ModuleRun) >= 2 && len(e.readRecords()) >= ticks+2
	})
	if err := os.Remove(hang); err != nil {
		t.Fatal(err)
	}
	e.eventually("the edit to reach the chart", func() bool {
		return e.releaseValues("slow")["count"] == 2.0
	})
}

// attempts is how many times the task of that kind waiting in "main" has
// failed (0: none waits).
func (e *env) attempts(kind queue.Kind) int {
	for _, q := range e.op.Status().Queues {
		for _, task := range q.Tasks {
			if q.Name == queue.MainQueue && task.Kind == string(kind) {
				return task.Attempts
			}
		}
	}
	return 0
}

// editDuringWrite is the real ConfigMap backend, except that its first
// Update returns only after edit ran: a user's edit lands, and reaches the
// operator, between a hook's config write and the hook adopting it.
type editDuringWrite struct {
	*kube.ConfigMap
	once sync.Once
	edit func()
}

func (b *editDuringWrite) Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error) {
	data, version, err := b.ConfigMap.Update(ctx, fn)
	b.once.Do(b.edit)
	return data, version, err
}

// A hook's config write whose result is adopted after a newer user edit
// arrived does not undo the edit: the edit reaches the chart.
func TestLateHookWriteKeepsNewerEdit(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, merged(map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n",
		"global-hooks/g.sh": recordingHook("g", `{"onStartup": 1}`,
			`echo '[{"op":"add","path":"/global/started","value":true}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"`),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha"))), map[string]string{"alpha": "count: 1\n"})
	e.backend = func(cm *kube.ConfigMap) ConfigBackend {
		return &editDuringWrite{ConfigMap: cm, edit: func() {
			live := e.configMap()
			live["alpha"] = "count: 2\n"
			e.setConfigMap(live)
			e.eventually("the edit to reach the operator", func() bool {
				_, store := e.op.trees.Current()
				v, _ := store.ModuleConfigValues("alpha")["alpha"].(map[string]any)
				return v["count"] == 2.0
			})
		}}
	}
	e.start()
	e.waitReady()
	assertJSON(t, e.releaseValues("alpha"), `{"count":2}`)
	if got := e.configMap()["global"]; got != "started: true\n" {
		t.Fatalf("the hook's write is gone: global = %q", got)
	}
}

// gatedHook is a module hook for binding config that waits while gate
// exists, then runs body.
func gatedHook(config, gate, body string) string {
	return "#!/usr/bin/env bash\n" +
		`if [ "${1:-}" = "--config" ]; then echo '` + config + `'; exit 0; fi` + "\n" +
		`while [ -e ` + gate + ` ]; do sleep 0.05; done` + "\n" + body + "\n"
}

// checked is a revision of the tree files, checked as the git syncer
// checks one before it publishes it.
func (e *env) checked(commit string, files map[string]string) Revision {
	e.t.Helper()
	dir := tree(e.t, files)
	model, err := e.op.CheckTree(e.t.Context(), dir, "modules", "global-hooks")
	if err != nil {
		e.t.Fatal(err)
	}
	return Revision{Revision: gitsync.Revision{Commit: commit, Dir: dir}, Model: model}
}

// Two revisions reported while the queue is busy: the newest runs, and
// its commit is the one on /status and on the release.
func TestNewestRevisionRuns(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	files := func(v string) map[string]string {
		return merged(map[string]string{
			"modules/values.yaml":           "alphaEnabled: true\n",
			"modules/001-alpha/values.yaml": "alpha:\n  v: " + v + "\n",
			"modules/001-alpha/hooks/h.sh":  gatedHook(`{"beforeHelm": 1}`, gate, ""),
		}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	}
	e := parallelSetup(t, files("start"), nil)
	e.commit = "0000000000000000000000000000000000000000"
	e.start()
	e.waitReady()
	a, b := e.checked("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", files("a")), e.checked("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", files("b"))

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.setConfigMap(map[string]string{"alpha": "busy: true\n"})
	e.eventually("alpha's run to block", func() bool {
		return e.op.Status().Modules[0].State == StateRunning
	})
	e.op.TreeChanged(a)
	e.op.TreeChanged(b)
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	e.eventually("revision b on the release", func() bool {
		rel, err := helmtest.Last(restCfg, e.ns, "alpha")
		return err == nil && rel.Labels[kube.LabelCommit] == b.Commit && e.releaseValues("alpha")["v"] == "b"
	})
	e.idle()
	if st := e.op.Status(); st.Revision != b.Commit {
		t.Fatalf("status revision = %s", st.Revision)
	}
	if inUse := e.op.InUse(); !slices.Contains(inUse, b.Commit) || slices.Contains(inUse, a.Commit) {
		t.Fatalf("in use: %v", inUse)
	}
}

// A values patch written by a hook in a named queue while a new tree is
// adopted is not lost with the old tree's store.
func TestValuesPatchAcrossAdoption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate, started, done := filepath.Join(dir, "gate"), filepath.Join(dir, "started"), filepath.Join(dir, "done")
	files := func(v string) map[string]string {
		return merged(map[string]string{
			"modules/values.yaml":           "alphaEnabled: true\n",
			"modules/001-alpha/values.yaml": "alpha:\n  v: " + v + "\n",
			// patches once, from a schedule in its own queue, once let through
			"modules/001-alpha/hooks/s.sh": "#!/usr/bin/env bash\n" +
				`if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","schedule":[{"crontab":"*/1 * * * * *","queue":"q"}]}'; exit 0; fi` + "\n" +
				`[ -e ` + done + ` ] && exit 0` + "\n" +
				`touch ` + started + `; while [ -e ` + gate + ` ]; do sleep 0.05; done` + "\n" +
				`touch ` + done + `; echo '[{"op":"add","path":"/alpha/fromHook","value":1}]' > "$VALUES_JSON_PATCH_PATH"` + "\n",
		}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := parallelSetup(t, files("1"), nil)
	e.start()
	e.waitReady()
	e.eventually("the schedule hook to start", func() bool { _, err := os.Stat(started); return err == nil })
	next := e.checked("cccccccccccccccccccccccccccccccccccccccc", files("2"))
	e.op.TreeChanged(next)
	e.eventually("the new tree adopted", func() bool { return e.op.Status().Revision == next.Commit })
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	e.eventually("the hook's patch and the new tree's values on the release", func() bool {
		v := e.releaseValues("alpha")
		return v["fromHook"] == 1.0 && v["v"] == 2.0
	})
}

// A stored values patch whose path a ConfigMap edit removed does not wedge
// its module: the operation is dropped and the module converges.
func TestStalePatchDropped(t *testing.T) {
	t.Parallel()
	once := filepath.Join(t.TempDir(), "once")
	e := parallelSetup(t, merged(map[string]string{
		"modules/values.yaml": "gammaEnabled: true\n",
		"modules/001-gamma/hooks/h.sh": "#!/usr/bin/env bash\n" +
			`if [ "${1:-}" = "--config" ]; then echo '{"beforeHelm": 1}'; exit 0; fi` + "\n" +
			`[ -e ` + once + ` ] && exit 0; touch ` + once + "\n" +
			`echo '[{"op":"replace","path":"/gamma/old","value":2}]' > "$VALUES_JSON_PATCH_PATH"` + "\n",
	}, withPrefix("modules/001-gamma", moduleChart("gamma", "gamma"))), map[string]string{"gamma": "old: 1\nkeep: 1\n"})
	e.start()
	e.waitReady()
	assertJSON(t, e.releaseValues("gamma"), `{"old":2,"keep":1}`)

	e.setConfigMap(map[string]string{"gamma": "keep: 3\n"})
	e.eventually("gamma to converge without old", func() bool { return e.releaseValues("gamma")["keep"] == 3.0 })
	e.idle()
	assertJSON(t, e.releaseValues("gamma"), `{"keep":3}`)
	if st := e.op.Status().Modules[0]; st.State != StateReady || st.LastError != "" {
		t.Fatalf("gamma: %+v", st)
	}
}
