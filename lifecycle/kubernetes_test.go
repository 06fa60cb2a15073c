package lifecycle

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runID is a label value unique to one test run, so bindings select only
// the objects the test makes.
func runID(t *testing.T) string {
	id := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano()%1e9)
	if len(id) > 63 {
		id = id[len(id)-63:]
	}
	return strings.Trim(strings.ReplaceAll(id, "/", "-"), "-_.")
}

// contexts flattens the binding contexts a hook got for a binding, in order.
func (e *env) contexts(hook, binding string) []map[string]any {
	var out []map[string]any
	for _, r := range e.readRecords() {
		if r.Hook != hook {
			continue
		}
		for _, c := range r.Ctx {
			if c["binding"] == binding {
				out = append(out, c)
			}
		}
	}
	return out
}

// brief is an event context as "type watchEvent name": enough to compare.
func brief(c map[string]any) string {
	obj, _ := c["object"].(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	s := fmt.Sprint(c["type"])
	if ev, ok := c["watchEvent"]; ok {
		s += " " + fmt.Sprint(ev)
	}
	if md != nil {
		s += " " + fmt.Sprint(md["name"])
	}
	return s
}

// groupContexts flattens the Group contexts a hook got for a group, in order.
func (e *env) groupContexts(hook, group string) []map[string]any {
	var out []map[string]any
	for _, r := range e.readRecords() {
		if r.Hook != hook {
			continue
		}
		for _, c := range r.Ctx {
			if c["type"] == "Group" && c["groupName"] == group {
				out = append(out, c)
			}
		}
	}
	return out
}

func briefs(cs []map[string]any) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = brief(c)
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (e *env) createConfigMap(name string, labels, data map[string]string) {
	e.t.Helper()
	_, err := client.CoreV1().ConfigMaps(e.ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) updateConfigMap(name string, change func(*corev1.ConfigMap)) {
	e.t.Helper()
	cms := client.CoreV1().ConfigMaps(e.ns)
	cm, err := cms.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	change(cm)
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// A global hook's kubernetes bindings (docs/lifecycle.md, steps 2, 3 and 9):
// Synchronization per binding before beforeAll, snapshots in beforeAll,
// Event contexts for add, update and delete of ConfigMaps and Secrets, a
// jqFilter that hides unrelated updates, selectors that select, and
// includeSnapshotsFrom. Without full objects kept, contexts carry the
// filter results only.
func TestKubernetesBindingContexts(t *testing.T) {
	t.Parallel()
	id := runID(t)
	cfg := fmt.Sprintf(`{"configVersion":"v1","beforeAll":1,"kubernetes":[
 {"name":"cms","apiVersion":"v1","kind":"ConfigMap","labelSelector":{"matchLabels":{"run":"%[1]s"}},"jqFilter":"{name: .metadata.name, v: .data.v}","keepFullObjectsInMemory":false},
 {"name":"secrets","apiVersion":"v1","kind":"Secret","labelSelector":{"matchLabels":{"run":"%[1]s"}},"nameSelector":{"matchNames":["s1","s2","s4"]},"fieldSelector":{"matchExpressions":[{"field":"type","operator":"Equals","value":"Opaque"}]},"includeSnapshotsFrom":["cms"]}]}`, id)
	files := map[string]string{
		"modules/values.yaml":   "global: {}\n",
		"global-hooks/watch.sh": recordingHook("watch", strings.ReplaceAll(cfg, "\n", ""), ""),
	}
	e := parallelSetup(t, files, nil)
	sel := map[string]string{"run": id}
	e.createConfigMap("a", sel, map[string]string{"v": "1"})
	e.createConfigMap("b", map[string]string{"run": "other"}, map[string]string{"v": "1"})
	if _, err := client.CoreV1().Secrets(e.ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1", Labels: sel}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.waitReady()

	if got, want := e.sequence(), []string{"watch:cms", "watch:secrets", "watch:beforeAll"}; !slices.Equal(got, want) {
		t.Fatalf("start-up sequence = %v, want %v", got, want)
	}
	recs := e.readRecords()
	assertJSON(t, recs[0].Ctx, `[{"binding":"cms","type":"Synchronization","objects":[{"filterResult":{"name":"a","v":"1"}}]}]`)
	sync := recs[1].Ctx[0]
	if got := keys(sync); !slices.Equal(got, []string{"binding", "objects", "snapshots", "type"}) {
		t.Fatalf("secrets Synchronization keys = %v", got)
	}
	objects := sync["objects"].([]any)
	if len(objects) != 1 || brief(map[string]any{"object": objects[0].(map[string]any)["object"]}) != "<nil> s1" {
		t.Fatalf("secrets Synchronization objects = %v", objects)
	}
	assertJSON(t, sync["snapshots"], `{"cms":[{"filterResult":{"name":"a","v":"1"}}]}`)
	// /status lists the bindings, and the watches with the bindings using them
	assertJSON(t, e.op.Status().Bindings, `[{"hook":"watch.sh","binding":"cms","kind":"ConfigMap","objects":1},{"hook":"watch.sh","binding":"secrets","kind":"Secret","objects":1}]`)
	var watches []string
	for _, w := range e.op.Status().Watches {
		if w.LabelSelector == "run="+id {
			watches = append(watches, fmt.Sprintf("%s %s %d %v", w.Kind, w.FieldSelector, w.Objects, w.Bindings))
		}
	}
	if !slices.Equal(watches, []string{"ConfigMap  1 [watch.sh:cms]", "Secret type=Opaque 1 [watch.sh:secrets]"}) {
		t.Fatalf("watches in /status: %q", watches)
	}
	beforeAll := recs[2].Ctx[0]
	if got := keys(beforeAll["snapshots"].(map[string]any)); !slices.Equal(got, []string{"cms", "secrets"}) {
		t.Fatalf("beforeAll snapshots = %v", beforeAll)
	}

	// an update the filter does not see, then one it does; an unselected
	// object; an add; a delete; Secrets the name and field selectors skip
	e.updateConfigMap("a", func(cm *corev1.ConfigMap) { cm.Annotations = map[string]string{"x": "y"} })
	e.updateConfigMap("a", func(cm *corev1.ConfigMap) { cm.Data["v"] = "2" })
	e.updateConfigMap("b", func(cm *corev1.ConfigMap) { cm.Data["v"] = "2" })
	e.createConfigMap("c", sel, map[string]string{"v": "3"})
	if err := client.CoreV1().ConfigMaps(e.ns).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	secretTypes := map[string]corev1.SecretType{"s3": corev1.SecretTypeOpaque, "s4": "example.com/custom", "s2": corev1.SecretTypeOpaque}
	for _, name := range []string{"s3", "s4", "s2"} {
		if _, err := client.CoreV1().Secrets(e.ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel}, Type: secretTypes[name]}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.eventually("the events", func() bool { return len(e.contexts("watch", "cms")) >= 4 && len(e.contexts("watch", "secrets")) >= 2 })
	time.Sleep(300 * time.Millisecond) // anything reported late would show now
	e.idle()

	cms := e.contexts("watch", "cms")[1:]
	if got, want := briefs(cms), []string{"Event Modified", "Event Added", "Event Deleted"}; !slices.Equal(got, want) {
		t.Fatalf("ConfigMap events = %v, want %v", got, want)
	}
	for i, fr := range []string{`{"name":"a","v":"2"}`, `{"name":"c","v":"3"}`, `{"name":"a","v":"2"}`} {
		if got := keys(cms[i]); !slices.Equal(got, []string{"binding", "filterResult", "type", "watchEvent"}) {
			t.Fatalf("event %d keys = %v", i, got)
		}
		assertJSON(t, cms[i]["filterResult"], fr)
	}
	secrets := e.contexts("watch", "secrets")[1:]
	if got, want := briefs(secrets), []string{"Event Added s2"}; !slices.Equal(got, want) {
		t.Fatalf("Secret events = %v, want %v", got, want)
	}
	assertJSON(t, secrets[0]["snapshots"], `{"cms":[{"filterResult":{"name":"c","v":"3"}}]}`)
}

// A v0 module hook (docs/lifecycle.md, steps 5, 6 and 10): lowercase kind,
// v0 event names and fields, monitors started with the module but no
// Synchronization run (as in the original), snapshots in beforeHelm and
// afterDeleteHelm; the monitors stop when the module is disabled.
func TestKubernetesV0ModuleHook(t *testing.T) {
	t.Parallel()
	id := runID(t)
	cfg := fmt.Sprintf(`{"beforeHelm":1,"afterDeleteHelm":1,"onKubernetesEvent":[{"name":"namespaces","kind":"namespace","event":["add","delete"],"selector":{"matchLabels":{"run":"%s"}}}]}`, id)
	files := map[string]string{
		"modules/values.yaml":             "global: {}\nwatcherEnabled: true\n",
		"modules/001-watcher/hooks/ns.sh": recordingHook("ns", cfg, ""),
		"modules/001-watcher/values.yaml": "watcher: {}\n",
	}
	e := parallelSetup(t, files, nil)
	nsName := func(n int) string { return fmt.Sprintf("%s-%d", e.ns, n) }
	mkNS := func(name string) {
		if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"run": id}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkNS(nsName(1))
	e.start()
	e.waitReady()
	if got, want := e.sequence(), []string{"ns:beforeHelm"}; !slices.Equal(got, want) {
		t.Fatalf("module start = %v, want %v", got, want)
	}
	recs := e.readRecords()
	if snap := recs[0].Ctx[0]["snapshots"].(map[string]any)["namespaces"].([]any); len(snap) != 1 {
		t.Fatalf("beforeHelm snapshots = %v", recs[0].Ctx)
	}

	mkNS(nsName(2))
	// losing the label takes it out of the selection: a delete
	n1, err := client.CoreV1().Namespaces().Get(t.Context(), nsName(1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1.Labels = nil
	if _, err := client.CoreV1().Namespaces().Update(t.Context(), n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("two events", func() bool { return len(e.contexts("ns", "namespaces")) >= 2 })
	events := e.contexts("ns", "namespaces")
	for i, want := range []struct{ ev, name string }{{"add", nsName(2)}, {"delete", nsName(1)}} {
		c := events[i]
		if c["type"] != "Event" || c["resourceEvent"] != want.ev || c["resourceName"] != want.name || c["resourceKind"] != "Namespace" || c["resourceNamespace"] != "" {
			t.Fatalf("event %d = %v, want %s of %s", i, c, want.ev, want.name)
		}
	}

	// disabled: afterDeleteHelm sees the snapshot, then nothing more arrives
	e.setConfigMap(map[string]string{"watcherEnabled": "false"})
	e.eventually("afterDeleteHelm", func() bool { return countHook(e.readRecords(), "ns", "afterDeleteHelm") == 1 })
	for _, r := range e.readRecords() {
		if r.binding() == "afterDeleteHelm" {
			if snap := r.Ctx[0]["snapshots"].(map[string]any)["namespaces"].([]any); len(snap) != 1 {
				t.Fatalf("afterDeleteHelm snapshots = %v", r.Ctx)
			}
		}
	}
	e.idle()
	before := len(e.readRecords())
	mkNS(nsName(3))
	time.Sleep(time.Second)
	if n := len(e.readRecords()); n != before {
		t.Fatalf("a disabled module's hook still gets events: %v", e.sequence()[before:])
	}
}

// Group bindings, waitForSynchronization false, executeHookOnSynchronization
// false, a named queue that runs while "main" is blocked, and compaction of
// an event burst into fewer runs that carry every event.
func TestKubernetesQueuesGroupsAndCompaction(t *testing.T) {
	t.Parallel()
	id := runID(t)
	groupCfg := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[
 {"name":"x","apiVersion":"v1","kind":"ConfigMap","group":"both","labelSelector":{"matchLabels":{"run":"%[1]s","k":"x"}}},
 {"name":"y","apiVersion":"v1","kind":"ConfigMap","group":"both","labelSelector":{"matchLabels":{"run":"%[1]s","k":"y"}},"executeHookOnEvent":["Added"]}],
 "schedule":[{"name":"tick","crontab":"@every 1h","group":"both"}]}`, id)
	burstCfg := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[
 {"name":"burst","apiVersion":"v1","kind":"ConfigMap","queue":"side","waitForSynchronization":false,"labelSelector":{"matchLabels":{"run":"%[1]s","k":"burst"}}},
 {"name":"quiet","apiVersion":"v1","kind":"ConfigMap","executeHookOnSynchronization":false,"labelSelector":{"matchLabels":{"run":"%[1]s","k":"quiet"}}}]}`, id)
	files := merged(map[string]string{
		"modules/values.yaml":   "global: {}\nblockerEnabled: true\n",
		"global-hooks/group.sh": recordingHook("group", strings.ReplaceAll(groupCfg, "\n", ""), ""),
		"global-hooks/burst.sh": recordingHook("burst", strings.ReplaceAll(burstCfg, "\n", ""), "sleep 0.5"),
		"modules/001-blocker/hooks/b.sh": recordingHook("blocker", `{"beforeHelm":1}`,
			`[ -e "$RECORD_FILE.block" ] && { echo "blocked on purpose" >&2; exit 1; }; true`),
	})
	e := parallelSetup(t, files, nil)
	e.createConfigMap("x1", map[string]string{"run": id, "k": "x"}, nil)
	e.createConfigMap("y1", map[string]string{"run": id, "k": "y"}, nil)
	e.start()
	e.waitReady()
	e.eventually("burst's Synchronization in its queue", func() bool { return len(e.contexts("burst", "burst")) == 1 })

	group := e.groupContexts("group", "both")
	if len(group) != 1 {
		t.Fatalf("group Synchronization runs = %d: %v", len(group), e.sequence())
	}
	assertJSON(t, keys(group[0]), `["binding","groupName","snapshots","type"]`)
	if group[0]["type"] != "Group" || len(group[0]["snapshots"].(map[string]any)["x"].([]any)) != 1 || len(group[0]["snapshots"].(map[string]any)["y"].([]any)) != 1 {
		t.Fatalf("group Synchronization = %v", group[0])
	}
	if n := len(e.contexts("burst", "quiet")); n != 0 {
		t.Fatalf("executeHookOnSynchronization false ran the hook %d times", n)
	}

	// block main; the side queue keeps taking events, compacted
	if err := os.WriteFile(e.records+".block", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.setConfigMap(map[string]string{"blocker": "x: 1\n"})
	e.eventually("main blocked", func() bool { return testutilCounter(e, "addon_operator_module_run_errors") >= 1 })
	const burst = 12
	for i := range burst {
		e.createConfigMap(fmt.Sprintf("burst-%02d", i), map[string]string{"run": id, "k": "burst"}, nil)
	}
	e.eventually("every burst event while main is blocked", func() bool { return len(e.contexts("burst", "burst")) == 1+burst })
	runs := 0
	for _, r := range e.readRecords() {
		if r.Hook == "burst" && r.binding() == "burst" {
			runs++
		}
	}
	if runs >= 1+burst {
		t.Fatalf("%d events took %d runs: no compaction", burst, runs-1)
	}
	var names []string
	for _, c := range e.contexts("burst", "burst")[1:] {
		names = append(names, brief(c))
	}
	for i := range burst {
		if want := fmt.Sprintf("Event Added burst-%02d", i); names[i] != want {
			t.Fatalf("event %d = %s, want %s (order or loss)", i, names[i], want)
		}
	}
	if err := os.Remove(e.records + ".block"); err != nil {
		t.Fatal(err)
	}
	e.idle()

	// a group event: a Group context with both snapshots; y's Modified is not wanted
	e.createConfigMap("x2", map[string]string{"run": id, "k": "x"}, nil)
	e.eventually("group event", func() bool { return len(e.groupContexts("group", "both")) == 2 })
	g := e.groupContexts("group", "both")[1]
	if g["type"] != "Group" || len(g["snapshots"].(map[string]any)["x"].([]any)) != 2 {
		t.Fatalf("group event = %v", g)
	}
	e.updateConfigMap("y1", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"a": "b"} })
	e.createConfigMap("q1", map[string]string{"run": id, "k": "quiet"}, nil)
	e.eventually("quiet's event", func() bool { return len(e.contexts("burst", "quiet")) == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := len(e.groupContexts("group", "both")); n != 2 {
		t.Fatalf("an unwanted event type ran the group: %d runs", n)
	}
}

// Watches survive an API server restart: events after it reach the hook.
func TestKubernetesAPIServerRestart(t *testing.T) {
	id := runID(t)
	cfg := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"cms","apiVersion":"v1","kind":"ConfigMap","labelSelector":{"matchLabels":{"run":"%s"}}}]}`, id)
	e := setup(t, map[string]string{"modules/values.yaml": "global: {}\n", "global-hooks/w.sh": recordingHook("w", cfg, "")}, nil)
	sel := map[string]string{"run": id}
	e.createConfigMap("before", sel, nil)
	e.start()
	e.waitReady()
	e.createConfigMap("one", sel, nil)
	e.eventually("the first event", func() bool { return len(e.contexts("w", "cms")) == 2 })

	controlPlane.StopAPIServer()
	if err := controlPlane.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.createConfigMap("two", sel, nil)
	e.updateConfigMap("one", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"after": "restart"} })
	if err := client.CoreV1().ConfigMaps(e.ns).Delete(t.Context(), "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("events after the restart", func() bool { return len(e.contexts("w", "cms")) >= 5 })
	time.Sleep(300 * time.Millisecond)
	// a resumed watch brings them in order; a re-list by name, deletes last
	got := briefs(e.contexts("w", "cms")[1:])
	slices.Sort(got)
	if want := []string{"Event Added one", "Event Added two", "Event Deleted before", "Event Modified one"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}
