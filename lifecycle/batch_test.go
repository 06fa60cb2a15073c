package lifecycle

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/addonops/addon-operator/internal/batchtest"
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

func (e *env) batchRuns() []batchRun {
	e.t.Helper()
	f, err := os.Open(e.records)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []batchRun
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r batchRun
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			e.t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

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
