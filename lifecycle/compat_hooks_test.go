package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Hook configs and binding contexts as the original addon-operator and
// shell-operator make them (docs/operator.md, "Hook configs and binding
// contexts").

// oneLine joins a multi-line hook config, which recordingHook echoes.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "") }

// v0Switch is a v0 hook body that, like hooks written for the original,
// reads .[0].resourceEvent and fails on anything else.
const v0Switch = `case "$(jq -r '.[0].resourceEvent' "$BINDING_CONTEXT_PATH")" in add|update|delete) ;; *) echo "no resourceEvent" >&2; exit 1;; esac`

// v0 onKubernetesEvent hooks get no Synchronization run: a hook that
// switches on resourceEvent does not block start-up, and its objects
// reach it only as events.
func TestCompatV0NoSynchronization(t *testing.T) {
	t.Parallel()
	id := runID(t)
	cfg := fmt.Sprintf(`{"onKubernetesEvent":[{"name":"cms","kind":"configmap","selector":{"matchLabels":{"run":"%s"}}}]}`, id)
	e := parallelSetup(t, map[string]string{
		"modules/values.yaml":    "global: {}\n",
		"global-hooks/legacy.sh": recordingHook("legacy", cfg, v0Switch),
	}, nil)
	e.createConfigMap("before", map[string]string{"run": id}, nil)
	e.start()
	e.waitReady()
	if got := e.sequence(); len(got) != 0 {
		t.Fatalf("a v0 hook ran at start-up: %v", got)
	}
	e.createConfigMap("after", map[string]string{"run": id}, nil)
	e.eventually("the add event", func() bool { return len(e.contexts("legacy", "cms")) == 1 })
	c := e.contexts("legacy", "cms")[0]
	if c["resourceEvent"] != "add" || c["resourceName"] != "after" || c["resourceKind"] != "ConfigMap" || c["resourceNamespace"] != e.ns {
		t.Fatalf("event = %v", c)
	}
}

// A v0 hook gets one run per event, however they pile up; a v1 hook's
// waiting run takes in the events of all its bindings, in order.
func TestCompatCombining(t *testing.T) {
	t.Parallel()
	id := runID(t)
	v0 := fmt.Sprintf(`{"onKubernetesEvent":[{"name":"cms","kind":"configmap","selector":{"matchLabels":{"run":"%s","k":"v0"}}}]}`, id)
	v1 := oneLine(fmt.Sprintf(`{"configVersion":"v1","kubernetes":[
 {"name":"a","apiVersion":"v1","kind":"ConfigMap","executeHookOnSynchronization":false,"queue":"q1","labelSelector":{"matchLabels":{"run":"%[1]s","k":"a"}}},
 {"name":"b","apiVersion":"v1","kind":"ConfigMap","executeHookOnSynchronization":false,"queue":"q1","labelSelector":{"matchLabels":{"run":"%[1]s","k":"b"}}}]}`, id))
	e := parallelSetup(t, map[string]string{
		"modules/values.yaml":    "global: {}\n",
		"global-hooks/legacy.sh": recordingHook("legacy", v0, v0Switch+"; sleep 0.3"),
		"global-hooks/modern.sh": recordingHook("modern", v1, "sleep 0.5"),
	}, nil)
	e.start()
	e.waitReady()
	const burst = 4
	for i := range burst {
		e.createConfigMap(fmt.Sprintf("v0-%d", i), map[string]string{"run": id, "k": "v0"}, nil)
		e.createConfigMap(fmt.Sprintf("a-%d", i), map[string]string{"run": id, "k": "a"}, nil)
		e.createConfigMap(fmt.Sprintf("b-%d", i), map[string]string{"run": id, "k": "b"}, nil)
	}
	e.eventually("every event", func() bool {
		return len(e.contexts("legacy", "cms")) == burst && len(e.contexts("modern", "a"))+len(e.contexts("modern", "b")) == 2*burst
	})
	e.idle()
	// the two watches deliver independently: order holds per binding
	byBinding := map[string][]string{}
	mixed := false
	for _, r := range e.readRecords() {
		if r.Hook == "legacy" && len(r.Ctx) != 1 {
			t.Fatalf("a v0 run got %d contexts: %v", len(r.Ctx), r.Ctx)
		}
		bindings := map[any]bool{}
		for _, c := range r.Ctx {
			key := r.Hook + "/" + fmt.Sprint(c["binding"])
			byBinding[key] = append(byBinding[key], strings.TrimPrefix(brief(c), "Event Added "))
			bindings[c["binding"]] = true
		}
		mixed = mixed || len(bindings) > 1
	}
	for key, want := range map[string][]string{
		"legacy/cms": {"v0-0", "v0-1", "v0-2", "v0-3"},
		"modern/a":   {"a-0", "a-1", "a-2", "a-3"},
		"modern/b":   {"b-0", "b-1", "b-2", "b-3"},
	} {
		if got := byBinding[key]; !slices.Equal(got, want) {
			t.Fatalf("%s events = %v, want %v (order or loss)", key, got, want)
		}
	}
	if !mixed {
		t.Fatalf("no v1 run combined its two bindings: %v", e.sequence())
	}
}

// The fields and aliases of the original's configs load and mean what they
// mean there: v1 watchEvent, string booleans, resynchronizationPeriod and
// settings; v0 objectName.
func TestCompatConfigAliases(t *testing.T) {
	t.Parallel()
	id := runID(t)
	v1 := fmt.Sprintf(`{"configVersion":"v1","settings":{"executionMinInterval":"1s","executionBurst":"3"},"kubernetes":[{"name":"added","apiVersion":"v1","kind":"ConfigMap","watchEvent":["Added"],"executeHookOnSynchronization":"false","keepFullObjectsInMemory":"true","resynchronizationPeriod":"10m","labelSelector":{"matchLabels":{"run":"%s"}}}]}`, id)
	v0 := fmt.Sprintf(`{"onKubernetesEvent":[{"name":"one","kind":"configmap","objectName":"target","event":["add","update"],"namespaceSelector":{"matchNames":["%s"]},"disableDebug":true}]}`, "NS")
	e := parallelSetup(t, nil, nil)
	files := map[string]string{
		"modules/values.yaml":    "global: {}\n",
		"global-hooks/modern.sh": recordingHook("modern", v1, ""),
		"global-hooks/legacy.sh": recordingHook("legacy", strings.Replace(v0, "NS", e.ns, 1), v0Switch),
	}
	e.dir = tree(t, files)
	e.createConfigMap("first", map[string]string{"run": id}, nil)
	e.start()
	e.waitReady()
	if got := e.sequence(); len(got) != 0 {
		t.Fatalf("start-up ran %v; want no Synchronization", got)
	}
	e.createConfigMap("target", map[string]string{"run": id}, nil)
	e.createConfigMap("other", map[string]string{"run": id}, nil)
	e.updateConfigMap("target", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"v": "2"} })
	e.eventually("the events", func() bool { return len(e.contexts("modern", "added")) >= 2 && len(e.contexts("legacy", "one")) >= 2 })
	time.Sleep(300 * time.Millisecond)
	e.idle()
	if got, want := briefs(e.contexts("modern", "added")), []string{"Event Added target", "Event Added other"}; !slices.Equal(got, want) {
		t.Fatalf("watchEvent [Added]: %v, want %v", got, want)
	}
	var legacy []string
	for _, c := range e.contexts("legacy", "one") {
		legacy = append(legacy, fmt.Sprint(c["resourceEvent"], " ", c["resourceName"]))
	}
	if want := []string{"add target", "update target"}; !slices.Equal(legacy, want) {
		t.Fatalf("objectName target: %v, want %v", legacy, want)
	}
}

// The v1 binding contexts of kubernetes and ordered bindings, key for key:
// Synchronization and Event with and without full objects and filters, an
// empty executeHookOnEvent that runs nothing, waitForSynchronization false
// without a queue (which still waits), and the snapshots every ordered
// binding but onStartup carries.
func TestCompatV1Contexts(t *testing.T) {
	t.Parallel()
	id := runID(t)
	sel := func(k string) string { return fmt.Sprintf(`"labelSelector":{"matchLabels":{"run":%q,"k":%q}}`, id, k) }
	cfg := oneLine(fmt.Sprintf(`{"configVersion":"v1","onStartup":1,"beforeAll":1,"kubernetes":[
 {"name":"full","apiVersion":"v1","kind":"ConfigMap",%s},
 {"name":"lean","apiVersion":"v1","kind":"ConfigMap","keepFullObjectsInMemory":false,"jqFilter":".data",%s},
 {"name":"bare","apiVersion":"v1","kind":"ConfigMap","keepFullObjectsInMemory":false,"executeHookOnEvent":[],%s},
 {"name":"nowait","apiVersion":"v1","kind":"ConfigMap","waitForSynchronization":false,%s}]}`, sel("full"), sel("lean"), sel("bare"), sel("nowait")))
	e := parallelSetup(t, map[string]string{
		"modules/values.yaml":    "global: {}\n",
		"global-hooks/shapes.sh": recordingHook("shapes", cfg, ""),
		"global-hooks/plain.sh":  recordingHook("plain", `{"configVersion":"v1","onStartup":1,"beforeAll":1}`, ""),
	}, nil)
	for _, k := range []string{"full", "lean", "bare", "nowait"} {
		e.createConfigMap(k+"-1", map[string]string{"run": id, "k": k}, map[string]string{"v": "1"})
	}
	e.start()
	e.waitReady()
	want := []string{"plain:onStartup", "shapes:onStartup", "shapes:full", "shapes:lean", "shapes:bare", "shapes:nowait", "plain:beforeAll", "shapes:beforeAll"}
	if got := e.sequence(); !slices.Equal(got, want) {
		t.Fatalf("start-up = %v, want %v", got, want)
	}
	recs := e.readRecords()
	assertJSON(t, recs[0].Ctx, `[{"binding":"onStartup"}]`)
	assertJSON(t, recs[6].Ctx, `[{"binding":"beforeAll","snapshots":{}}]`)
	full := recs[2].Ctx[0]
	if got := keys(full); !slices.Equal(got, []string{"binding", "objects", "type"}) || full["type"] != "Synchronization" {
		t.Fatalf("full Synchronization = %v", full)
	}
	if item := full["objects"].([]any)[0].(map[string]any); !slices.Equal(keys(item), []string{"object"}) {
		t.Fatalf("full item = %v", item)
	}
	assertJSON(t, recs[3].Ctx, `[{"binding":"lean","type":"Synchronization","objects":[{"filterResult":{"v":"1"}}]}]`)
	assertJSON(t, recs[4].Ctx, `[{"binding":"bare","type":"Synchronization","objects":[{}]}]`)
	snaps := recs[7].Ctx[0]["snapshots"].(map[string]any)
	if got := keys(snaps); !slices.Equal(got, []string{"bare", "full", "lean", "nowait"}) {
		t.Fatalf("beforeAll snapshots = %v", snaps)
	}
	assertJSON(t, snaps["bare"], `[{}]`)
	assertJSON(t, snaps["lean"], `[{"filterResult":{"v":"1"}}]`)

	e.updateConfigMap("bare-1", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"v": "2"} })
	e.updateConfigMap("lean-1", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"v": "2"} })
	e.createConfigMap("full-2", map[string]string{"run": id, "k": "full"}, nil)
	e.eventually("the events", func() bool { return len(e.contexts("shapes", "full")) == 2 && len(e.contexts("shapes", "lean")) == 2 })
	time.Sleep(300 * time.Millisecond)
	e.idle()
	if n := len(e.contexts("shapes", "bare")); n != 1 {
		t.Fatalf("executeHookOnEvent [] ran the hook for events: %v", e.contexts("shapes", "bare")[1:])
	}
	ev := e.contexts("shapes", "full")[1]
	if got := keys(ev); !slices.Equal(got, []string{"binding", "object", "type", "watchEvent"}) || brief(ev) != "Event Added full-2" {
		t.Fatalf("full event = %v", ev)
	}
	assertJSON(t, e.contexts("shapes", "lean")[1], `{"binding":"lean","type":"Event","watchEvent":"Modified","filterResult":{"v":"2"}}`)
}

// Group contexts carry the binding that fired and groupName, at
// Synchronization, on events and on schedules; a v1 schedule context is
// typed "Schedule", a v0 one is the binding name alone.
func TestCompatGroupAndScheduleContexts(t *testing.T) {
	t.Parallel()
	id := runID(t)
	grouped := oneLine(fmt.Sprintf(`{"configVersion":"v1","kubernetes":[
 {"name":"x","apiVersion":"v1","kind":"ConfigMap","group":"g","labelSelector":{"matchLabels":{"run":"%[1]s","k":"x"}}},
 {"name":"y","apiVersion":"v1","kind":"ConfigMap","group":"g","keepFullObjectsInMemory":false,"labelSelector":{"matchLabels":{"run":"%[1]s","k":"y"}}},
 {"name":"z","apiVersion":"v1","kind":"ConfigMap","keepFullObjectsInMemory":false,"executeHookOnEvent":[],"labelSelector":{"matchLabels":{"run":"%[1]s","k":"z"}}}],
 "schedule":[{"name":"tick","crontab":"*/1 * * * * *","group":"g","includeSnapshotsFrom":["z"],"queue":"tick"},{"name":"tock","crontab":"*/1 * * * * *","includeSnapshotsFrom":["z"],"queue":"tock"}]}`, id))
	e := parallelSetup(t, map[string]string{
		"modules/values.yaml":     "global: {}\n",
		"global-hooks/grouped.sh": recordingHook("grouped", grouped, ""),
		"global-hooks/legacy.sh":  recordingHook("legacy", `{"schedule":[{"name":"old","crontab":"*/1 * * * * *"}]}`, ""),
	}, nil)
	e.createConfigMap("x1", map[string]string{"run": id, "k": "x"}, nil)
	e.createConfigMap("z1", map[string]string{"run": id, "k": "z"}, nil)
	e.start()
	e.waitReady()
	// schedules start after start-up: the first Group context is the
	// Synchronization, of the group's last binding
	group := e.groupContexts("grouped", "g")
	if len(group) == 0 {
		t.Fatalf("no Group context: %v", e.readRecords())
	}
	snaps := group[0]["snapshots"].(map[string]any)
	if group[0]["binding"] != "y" || len(snaps["x"].([]any)) != 1 || len(snaps["y"].([]any)) != 0 || len(snaps) != 2 {
		t.Fatalf("group Synchronization = %v", group[0])
	}
	e.createConfigMap("y1", map[string]string{"run": id, "k": "y"}, nil)
	e.eventually("the group's event and tick", func() bool {
		return len(e.contexts("grouped", "y")) >= 2 && len(e.contexts("grouped", "tick")) >= 1 &&
			len(e.contexts("grouped", "tock")) >= 1 && len(e.contexts("legacy", "old")) >= 1
	})
	ev := e.contexts("grouped", "y")[1]
	if got := keys(ev); !slices.Equal(got, []string{"binding", "groupName", "snapshots", "type"}) || ev["type"] != "Group" || ev["groupName"] != "g" {
		t.Fatalf("group event = %v", ev)
	}
	snaps = ev["snapshots"].(map[string]any)
	if x := snaps["x"].([]any); len(x) != 1 || brief(x[0].(map[string]any)) != "<nil> x1" || len(snaps) != 2 {
		t.Fatalf("group event snapshots = %v", snaps)
	}
	assertJSON(t, snaps["y"], `[{}]`)
	tick := e.contexts("grouped", "tick")[0]
	if got := keys(tick); !slices.Equal(got, []string{"binding", "groupName", "snapshots", "type"}) || tick["type"] != "Group" {
		t.Fatalf("tick = %v", tick)
	}
	if got := keys(tick["snapshots"].(map[string]any)); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("tick snapshots = %v", tick["snapshots"])
	}
	assertJSON(t, e.contexts("grouped", "tock")[0], `{"binding":"tock","type":"Schedule","snapshots":{"z":[{}]}}`)
	assertJSON(t, e.contexts("legacy", "old")[0], `{"binding":"old"}`)
	// a run never holds two contexts of one group in a row
	for _, r := range e.readRecords() {
		for i := 1; i < len(r.Ctx); i++ {
			if r.Ctx[i]["groupName"] != nil && r.Ctx[i]["groupName"] == r.Ctx[i-1]["groupName"] {
				t.Fatalf("uncompacted group contexts: %v", r.Ctx)
			}
		}
	}
}
