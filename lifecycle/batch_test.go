package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/batchtest"
	"github.com/addonops/addon-operator/loader"
)

// batchRun is one run the batch executable recorded.
type batchRun struct {
	Hook   string           `json:"hook"`
	Args   []string         `json:"args"`
	Module string           `json:"module"`
	Ctx    []map[string]any `json:"ctx"`
	Values map[string]any   `json:"values"`
	Config map[string]any   `json:"config"`
}

func (e *env) batchRuns() []batchRun { return readJSONLines[batchRun](e.t, e.records) }

// TestBatchHookRuns: a compiled module-sdk style executable in a module's
// hooks/ loads as the hooks it lists; each runs as `hook run ID` with the
// files of any hook, its kubernetes binding fires on the API server's
// objects, and its values patches reach the chart.
func TestBatchHookRuns(t *testing.T) {
	id := runID(t)
	e := setup(t, merged(
		withPrefix("modules/001-batch-mod", moduleChart("batch-mod", "batchMod")),
		map[string]string{
			// no .helmignore: the executable stays out of the chart, and so
			// out of the release Secret, without one (docs/operator.md, "Batch hooks")
			"modules/001-batch-mod/values.yaml": "batchModEnabled: true\nbatchMod:\n  replicas: 1\n",
		},
	), nil)
	config := fmt.Sprintf(`{"version":"v1","hooks":[
	 {"configVersion":"v1","metadata":{"name":"watch","path":"hooks/watch"},"beforeHelm":1,
	  "kubernetes":[{"name":"cms","apiVersion":"v1","kind":"ConfigMap","jqFilter":".metadata.name",
	   "labelSelector":{"matchLabels":{"batch":%q}},"namespace":{"nameSelector":{"matchNames":[%q]}}}]},
	 {"configVersion":"v1","metadata":{"name":"start","path":"hooks/start"},"onStartup":1}]}`, id, e.ns)
	batchtest.Build(t, filepath.Join(e.dir, "modules", "001-batch-mod", "hooks"), "batch",
		batchtest.Options{Config: config, Key: "batchMod"})
	e.createConfigMap("cm-a", map[string]string{"batch": id}, nil)
	e.start()
	e.waitReady()

	var seq []string
	for _, r := range e.batchRuns() {
		seq = append(seq, fmt.Sprint(r.Args)+" "+fmt.Sprint(r.Ctx[0]["binding"]))
		if r.Module != "batch-mod" {
			t.Errorf("MODULE_NAME = %q", r.Module)
		}
	}
	want := []string{"[hook run 1] onStartup", "[hook run 0] cms", "[hook run 0] beforeHelm"}
	if !reflect.DeepEqual(seq, want) {
		t.Fatalf("runs = %q, want %q", seq, want)
	}
	first := e.batchRuns()[0]
	// CONFIG_VALUES_PATH: no ConfigMap, so null sections, as in the
	// original; VALUES_PATH: the module's values and global.enabledModules
	assertJSON(t, first.Config, `{"global":null,"batchMod":null}`)
	assertJSON(t, first.Values["batchMod"], `{"replicas":1}`)
	if g, _ := first.Values["global"].(map[string]any); g == nil || g["enabledModules"] == nil {
		t.Fatalf("VALUES_PATH global = %v", first.Values["global"])
	}
	v := e.releaseValues("batch-mod")
	assertJSON(t, v["batch-0"], `{"binding":"beforeHelm","objects":["cm-a"]}`)
	assertJSON(t, v["batch-1"], `{"binding":"onStartup","objects":[]}`)

	// an object the binding selects runs the hook; its patch changes the
	// values, so the module runs again and the chart gets them
	e.createConfigMap("cm-b", map[string]string{"batch": id}, nil)
	e.eventually("the chart to see cm-b", func() bool {
		b, _ := json.Marshal(e.releaseValues("batch-mod")["batch-0"])
		return string(b) == `{"binding":"beforeHelm","objects":["cm-a","cm-b"]}`
	})
	var event *batchRun
	for _, r := range e.batchRuns() {
		if r.Ctx[0]["type"] == "Group" {
			event = &r
		}
	}
	if event == nil || event.Ctx[0]["binding"] != "cms" || event.Ctx[0]["groupName"] != "main" || !reflect.DeepEqual(event.Args, []string{"hook", "run", "0"}) {
		t.Fatalf("event run = %+v", event)
	}
}

// TestBatchHookWebhookRun: a validating webhook bound by a module's batch
// hook is called by the API server, and the executable runs as `hook run
// ID` with MODULE_NAME, as its other runs do. module-sdk's `hook config`
// has no webhook bindings, so the test gives the loaded batch hook one
// from a v1 config and hands the operator that model (as a checked
// revision).
func TestBatchHookWebhookRun(t *testing.T) {
	cluster(t)
	e := setup(t, merged(
		withPrefix("modules/001-batch-guard", moduleChart("batch-guard", "batchGuard")),
		map[string]string{"modules/001-batch-guard/values.yaml": "batchGuardEnabled: true\n"},
	), nil)
	hooksDir := filepath.Join(e.dir, "modules", "001-batch-guard", "hooks")
	batchtest.Build(t, hooksDir, "batch", batchtest.Options{Config: `{"version":"v1","hooks":[
	 {"configVersion":"v1","metadata":{"name":"guard","path":"hooks/guard"},"afterHelm":1}]}`})
	model, err := loader.New(loader.WithLogger(quiet())).Load(t.Context(), e.dir, filepath.Join(e.dir, "modules"), filepath.Join(e.dir, "global-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	mod := model.Module("batch-guard")
	if mod == nil || len(mod.Hooks) != 1 || len(mod.Hooks[0].Args) == 0 {
		t.Fatalf("the batch hook did not load: %+v", mod)
	}
	bound, err := loader.ParseHookConfig(fmt.Appendf(nil, `{"configVersion":"v1","kubernetesValidating":[{
	 "name":"batch-guard.webhook.test","failurePolicy":"Fail","timeoutSeconds":5,
	 "labelSelector":{"matchLabels":{"batch-webhook":%q}},
	 "rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"],"scope":"Namespaced"}]}]}`, e.ns), false)
	if err != nil {
		t.Fatal(err)
	}
	mod.Hooks[0].Config.Admission = bound.Admission
	configName := "hooks-" + e.ns
	withWebhookServer(t, e, configName, 64<<10)
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), configName, metav1.DeleteOptions{})
	})
	serve := e.beforeRun
	e.beforeRun = func(o *Operator) {
		serve(o)
		o.TreeChanged(Revision{Revision: gitsync.Revision{Commit: strings.Repeat("b", 40), Dir: e.dir}, Model: model})
	}
	e.start()
	e.waitReady()

	ctx := t.Context()
	create := func(name string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"batch-webhook": e.ns}}}
		_, err := client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	var webhookRun *batchRun
	e.eventually("the API server to call the batch hook", func() bool {
		if err := create(fmt.Sprintf("guarded-%d", time.Now().UnixNano())); err != nil {
			t.Logf("create: %v", err) // shown when it times out
			return false
		}
		for _, r := range e.batchRuns() {
			if r.Ctx[0]["type"] == "Validating" {
				webhookRun = &r
			}
		}
		return webhookRun != nil
	})
	if !reflect.DeepEqual(webhookRun.Args, []string{"hook", "run", "0"}) || webhookRun.Module != "batch-guard" ||
		webhookRun.Ctx[0]["binding"] != "batch-guard.webhook.test" {
		t.Fatalf("webhook run: args %q, MODULE_NAME %q, binding %v", webhookRun.Args, webhookRun.Module, webhookRun.Ctx[0]["binding"])
	}
}
