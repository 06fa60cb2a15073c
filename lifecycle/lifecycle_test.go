package lifecycle

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

// The start-up sequence (docs/lifecycle.md, steps 1, 3–8) with the files
// each hook gets.
func TestStartupSequence(t *testing.T) {
	t.Parallel()
	files := merged(
		map[string]string{
			"modules/values.yaml": "global:\n  param1: 100\nalphaEnabled: true\nbetaEnabled: true\ngammaEnabled: false\n",
			"global-hooks/g.sh":   recordingHook("g", `{"onStartup": 1, "beforeAll": 1, "afterAll": 1}`, ""),
			"global-hooks/h.sh": recordingHook("h", `{"onStartup": 0, "afterAll": 2}`,
				`[ "$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")" = onStartup ] && echo '[{"op":"add","path":"/global/discovered","value":"yes"}]' > "$VALUES_JSON_PATCH_PATH"; true`),
			"modules/001-alpha/values.yaml": "alpha:\n  a: 1\n",
			"modules/001-alpha/hooks/m.sh": recordingHook("alpha", `{"onStartup": 1, "beforeHelm": 1, "afterHelm": 1}`,
				`[ "$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")" = beforeHelm ] && echo '[{"op":"add","path":"/alpha/computed","value":"c"}]' > "$VALUES_JSON_PATCH_PATH"; true`),
			"modules/002-beta/enabled":     "#!/usr/bin/env bash\njq -c '{hook:\"beta-enabled\", ctx:[{binding:\"enabled\"}], values:.}' \"$VALUES_PATH\" >> \"$RECORD_FILE\"\necho true > \"$MODULE_ENABLED_RESULT\"\n",
			"modules/002-beta/hooks/b.sh":  recordingHook("beta", `{"beforeHelm": 1}`, ""),
			"modules/003-gamma/hooks/c.sh": recordingHook("gamma", `{"onStartup": 1, "beforeHelm": 1}`, ""),
		},
		withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")),
		withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")),
	)
	e := parallelSetup(t, files, map[string]string{"global": "param1: 200\n"})
	e.start()
	e.waitReady()

	want := []string{
		"h:onStartup", "g:onStartup", // step 1, by ORDER
		"g:beforeAll",                                            // step 3
		"beta-enabled:enabled",                                   // step 4
		"alpha:onStartup", "alpha:beforeHelm", "alpha:afterHelm", // step 5
		"beta:beforeHelm",          // step 5
		"g:afterAll", "h:afterAll", // step 8
	}
	if got := e.sequence(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sequence:\n got %v\nwant %v", got, want)
	}
	recs := e.readRecords()
	// global hook: global sections only; config is the ConfigMap, values merged and patched
	g := recs[2]
	assertJSON(t, g.Config, `{"global":{"param1":200}}`)
	assertJSON(t, g.Values, `{"global":{"param1":200,"discovered":"yes"}}`)
	// the enabled script sees the modules enabled before it
	assertJSON(t, recs[3].Values["global"].(map[string]any)["enabledModules"], `["alpha"]`)
	// module hooks: global + module, with the full enabledModules list
	a := recs[4]
	assertJSON(t, a.Values, `{"global":{"param1":200,"discovered":"yes","enabledModules":["alpha","beta"]},"alpha":{"a":1}}`)
	// no alpha section in the ConfigMap: null, as in the original
	assertJSON(t, a.Config, `{"global":{"param1":200},"alpha":null}`)
	assertJSON(t, recs[6].Values["alpha"], `{"a":1,"computed":"c"}`)
	// Helm got the patched values, without enabledModules
	assertJSON(t, e.releaseValues("alpha"), `{"a":1,"computed":"c"}`)
	if !e.hasRelease("alpha") || !e.hasRelease("beta") || e.hasRelease("gamma") {
		t.Fatal("releases: want alpha and beta, not gamma")
	}
	st := e.op.Status()
	if st.Modules[2].Enabled || st.Modules[0].State != StateReady {
		t.Fatalf("status = %+v", st.Modules)
	}
}

// The two examples of the lifecycle the original documents: nginx-ingress disabled by its own
// values.yaml; some-module enabled by the ConfigMap, disabled by its script.
func TestLifecycleExamples(t *testing.T) {
	t.Parallel()
	files := merged(
		map[string]string{
			"modules/values.yaml":                   "global:\n  param1: 100\nsomeModuleEnabled: false\nnginxIngressEnabled: true\n",
			"modules/001-nginx-ingress/values.yaml": "nginxIngressEnabled: false\n",
			"modules/01-some-module/values.yaml":    "someModule:\n  param1: \"String\"\n",
			"modules/01-some-module/enabled":        "#!/bin/bash\n\necho false > $MODULE_ENABLED_RESULT\n",
			"modules/01-some-module/hooks/h.sh":     recordingHook("some", `{"onStartup": 1}`, ""),
		},
		withPrefix("modules/001-nginx-ingress", moduleChart("nginx-ingress", "nginxIngress")),
		withPrefix("modules/01-some-module", moduleChart("some-module", "someModule")),
	)
	e := parallelSetup(t, files, map[string]string{
		"global":            "param1: 200\n",
		"someModule":        "param1: \"Long string\"\nparam2: \"FOO\"\n",
		"someModuleEnabled": "true",
	})
	e.start()
	e.waitReady()
	if e.hasRelease("nginx-ingress") || e.hasRelease("some-module") {
		t.Fatal("a disabled module was installed")
	}
	if len(e.readRecords()) != 0 {
		t.Fatalf("hooks of disabled modules ran: %v", e.sequence())
	}
	for _, m := range e.op.Status().Modules {
		if m.Enabled {
			t.Fatalf("%s enabled", m.Name)
		}
	}
}

// docs/operator.md, "Values": a config patch lands in the ConfigMap as param3, and the next
// run of the hook sees it.
func TestConfigPatchPersists(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml":                 "global:\n  param1: 100\n  param2: \"Yes\"\nsomeModuleEnabled: true\n",
		"modules/001-some-module/values.yaml": "someModule:\n  param1: \"String\"\n",
		"modules/001-some-module/hooks/hook.sh": recordingHook("hook", `{"beforeHelm": 1}`,
			`cat > $CONFIG_VALUES_JSON_PATCH_PATH <<EOF
  [{"op":"add", "path":"/someModule/param3", "value":"newValue"}]
EOF`),
	}, withPrefix("modules/001-some-module", moduleChart("some-module", "someModule")))
	e := parallelSetup(t, files, map[string]string{
		"global":     "param1: 200\n",
		"someModule": "param1: \"Long string\"\nparam2: \"FOO\"\n",
	})
	e.start()
	e.waitReady()
	cm := e.configMap()
	if !strings.Contains(cm["someModule"], "param3: newValue") || cm["global"] != "param1: 200\n" {
		t.Fatalf("ConfigMap = %q", cm)
	}
	// run the module again: the hook now gets param3 in both files
	e.op.queues.Main().Add(e.op.steps.mods.moduleRunTask("some-module", false))
	e.idle()
	recs := e.readRecords()
	last := recs[len(recs)-1]
	assertJSON(t, last.Config, `{"global":{"param1":200},"someModule":{"param1":"Long string","param2":"FOO","param3":"newValue"}}`)
	assertJSON(t, last.Values, `{"global":{"param1":200,"param2":"Yes","enabledModules":["some-module"]},"someModule":{"param1":"Long string","param2":"FOO","param3":"newValue"}}`)
}

func twoModules() map[string]string {
	return merged(map[string]string{
		"modules/values.yaml":          "global:\n  g: 1\nalphaEnabled: true\nbetaEnabled: true\n",
		"global-hooks/g.sh":            recordingHook("g", `{"beforeAll": 1, "afterAll": 1}`, ""),
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", `{"onStartup": 1, "beforeHelm": 1, "afterDeleteHelm": 1}`, ""),
		"modules/002-beta/hooks/b.sh":  recordingHook("beta", `{"beforeHelm": 1}`, ""),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")), withPrefix("modules/002-beta", moduleChart("beta", "beta")))
}

// Step 16: a module section change re-runs only that module (without
// onStartup); a global change reloads all; nothing changed means no upgrade.
func TestConfigMapEvents(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, twoModules(), map[string]string{"global": "g: 1\n"})
	e.start()
	e.waitReady()
	base := len(e.readRecords())
	upA, upB := e.upgrades("alpha"), e.upgrades("beta")

	e.setConfigMap(map[string]string{"global": "g: 1\n", "beta": "x: 2\n"})
	e.eventually("beta re-run", func() bool { return e.upgrades("beta") == upB+1 })
	e.idle()
	if got := e.sequence()[base:]; !reflect.DeepEqual(got, []string{"beta:beforeHelm"}) {
		t.Fatalf("after a module section change: %v", got)
	}
	assertJSON(t, e.releaseValues("beta"), `{"x":2}`)
	if e.upgrades("alpha") != upA {
		t.Fatal("alpha was upgraded by beta's change")
	}

	base = len(e.readRecords())
	e.setConfigMap(map[string]string{"global": "g: 1\nunused: true\n", "beta": "x: 2\n"})
	e.eventually("reload all", func() bool { return len(e.readRecords()) >= base+4 })
	e.idle()
	want := []string{"g:beforeAll", "alpha:beforeHelm", "beta:beforeHelm", "g:afterAll"}
	if got := e.sequence()[base:]; !reflect.DeepEqual(got, want) {
		t.Fatalf("after a global change: %v, want %v", got, want)
	}
	// the charts show global values, so the new key upgrades both
	if e.upgrades("alpha") != upA+1 {
		t.Fatalf("alpha upgrades = %v, want %v", e.upgrades("alpha"), upA+1)
	}

	// the same ConfigMap written again, and a reload with nothing new: no upgrade
	upA, upB = e.upgrades("alpha"), e.upgrades("beta")
	e.op.steps.queueReloadAll()
	e.idle()
	e.waitReady()
	if e.upgrades("alpha") != upA || e.upgrades("beta") != upB {
		t.Fatal("a reload with nothing changed ran a Helm upgrade")
	}
}

// Step 6: disabling a module in the ConfigMap uninstalls it and then runs
// afterDeleteHelm; enabling it again runs onStartup again.
func TestDisableByConfigMap(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, twoModules(), nil)
	e.start()
	e.waitReady()
	if !e.hasRelease("alpha") {
		t.Fatal("alpha not installed")
	}
	base := len(e.readRecords())
	e.setConfigMap(map[string]string{"alphaEnabled": "false"})
	e.eventually("alpha deleted", func() bool { return !e.hasRelease("alpha") })
	e.idle()
	seq := e.sequence()[base:]
	if !slices.Contains(seq, "alpha:afterDeleteHelm") || slices.Contains(seq, "alpha:beforeHelm") {
		t.Fatalf("sequence = %v", seq)
	}
	if _, err := client.CoreV1().ConfigMaps(e.ns).Get(context.Background(), "alpha-values", metav1.GetOptions{}); err == nil {
		t.Fatal("the release's resources are still there")
	}
	base = len(e.readRecords())
	e.setConfigMap(map[string]string{"alphaEnabled": "true"})
	e.eventually("alpha back", func() bool { return e.hasRelease("alpha") })
	e.idle()
	if seq := e.sequence()[base:]; !slices.Contains(seq, "alpha:onStartup") {
		t.Fatalf("re-enabled module did not run onStartup: %v", seq)
	}
}

// docs/lifecycle.md, step 5: an afterHelm failure in the first run re-runs onStartup,
// beforeHelm, Helm and afterHelm.
func TestAfterHelmFailureRetriesWholeRun(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n",
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", `{"onStartup": 1, "beforeHelm": 1, "afterHelm": 1}`,
			`if [ "$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")" = afterHelm ] && [ ! -e "$RECORD_FILE.failed" ]; then touch "$RECORD_FILE.failed"; echo "afterHelm broke" >&2; exit 1; fi`),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()
	want := []string{"alpha:onStartup", "alpha:beforeHelm", "alpha:afterHelm", "alpha:onStartup", "alpha:beforeHelm", "alpha:afterHelm"}
	if got := e.sequence(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sequence = %v", got)
	}
	if n := testutilCounter(e, "addon_operator_module_run_errors"); n != 1 {
		t.Fatalf("module_run_errors = %v", n)
	}
}

// Step 7 at start-up: a release of ours whose module directory is gone is
// purged (no hooks); a release that is not ours is left alone.
func TestPurgeAtStartup(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, twoModules(), nil)
	// a release of ours for a module that is not in the tree
	if _, err := e.helm.Upgrade(context.Background(), releaseFor(t, "orphan")); err != nil {
		t.Fatal(err)
	}
	// someone else's release
	cfg, err := helmtest.Config(restCfg, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace = "foreign", e.ns
	if _, err := inst.Run(&chart.Chart{Metadata: &chart.Metadata{Name: "foreign", Version: "0.1.0", APIVersion: "v2"}}, nil); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.waitReady()
	if e.hasRelease("orphan") {
		t.Fatal("orphan release of ours was not purged")
	}
	if _, err := action.NewGet(cfg).Run("foreign"); err != nil {
		t.Fatalf("a release that is not ours was touched: %v", err)
	}
}

// docs/operator.md, "Values": invalid config values stop start-up with the error; a bad
// ConfigMap change later is refused and the current state stays.
func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	files := merged(twoModules(), map[string]string{
		"global-hooks/openapi/config-values.yaml": "type: object\nrequired: [project]\nproperties:\n  project: {type: string}\n  g: {type: integer}\n",
	})
	e := parallelSetup(t, files, map[string]string{"global": "g: 1\n"})
	e.start()
	select {
	case err := <-e.done:
		if err == nil || !strings.Contains(err.Error(), "global.project in body is required") {
			t.Fatalf("err = %v", err)
		}
		e.cancel = nil
	case <-time.After(30 * time.Second):
		t.Fatal("operator started on invalid config")
	}

	e2 := parallelSetup(t, files, map[string]string{"global": "project: p\ng: 1\n"})
	e2.start()
	e2.waitReady()
	up := e2.upgrades("alpha")
	e2.setConfigMap(map[string]string{"global": "project: 5\n", "alpha": "x: ["})
	e2.eventually("the bad ConfigMap counted", func() bool { return testutilCounter(e2, "addon_operator_config_errors") >= 1 })
	e2.idle()
	if e2.upgrades("alpha") != up {
		t.Fatal("a bad ConfigMap queued work")
	}
}
