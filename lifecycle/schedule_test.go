package lifecycle

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func countHook(recs []record, hook, binding string) int {
	n := 0
	for _, r := range recs {
		if r.Hook == hook && r.binding() == binding {
			n++
		}
	}
	return n
}

// Schedule bindings (docs/lifecycle.md, steps 11 and 12): a global hook every second in
// a named queue; its values patch reloads all modules; a module's
// allowFailure schedule is counted and dropped; the named queue runs while
// "main" is blocked; a disabled module's schedule stops.
func TestScheduleBindings(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml": "global: {}\nalphaEnabled: true\nbetaEnabled: true\n",
		"global-hooks/tick.sh": recordingHook("tick", `{"configVersion":"v1","afterAll":1,"schedule":[{"name":"every-second","crontab":"*/1 * * * * *","queue":"ticks"}]}`,
			`if [ "$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")" = every-second ] && [ ! -e "$RECORD_FILE.patched" ]; then
  touch "$RECORD_FILE.patched"; echo '[{"op":"add","path":"/global/tick","value":1}]' > "$VALUES_JSON_PATCH_PATH"
fi`),
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", `{"configVersion":"v1","schedule":[{"crontab":"*/1 * * * * *","allowFailure":true}]}`,
			`[ "$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")" = schedule ] && exit 1; true`),
		"modules/002-beta/hooks/b.sh": recordingHook("beta", `{"beforeHelm":1}`,
			`[ -e "$RECORD_FILE.block" ] && { echo "blocked on purpose" >&2; exit 1; }; true`),
	}, withPrefix("modules/002-beta", moduleChart("beta", "beta")))
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()

	e.eventually("the tick hook to fire", func() bool { return countHook(e.readRecords(), "tick", "every-second") >= 1 })
	for _, r := range e.readRecords() {
		if r.Hook == "tick" && r.binding() == "every-second" {
			assertJSON(t, r.Ctx, `[{"binding":"every-second","type":"Schedule"}]`)
			break
		}
	}
	// the first tick's values patch is 'global values changed': all modules reload
	e.eventually("afterAll again", func() bool { return countHook(e.readRecords(), "tick", "afterAll") >= 2 })
	e.eventually("alpha's failing schedule counted", func() bool { return testutilCounter(e, "addon_operator_hook_allowed_errors") >= 2 })
	if n := testutilCounter(e, "addon_operator_hook_errors"); n != 0 {
		t.Fatalf("allowFailure runs counted as hook errors: %v", n)
	}

	// block "main" with a failing module run; the named queue keeps ticking
	if err := os.WriteFile(e.records+".block", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.setConfigMap(map[string]string{"beta": "x: 1\n"})
	e.eventually("main blocked", func() bool { return testutilCounter(e, "addon_operator_module_run_errors") >= 1 })
	before := countHook(e.readRecords(), "tick", "every-second")
	e.eventually("ticks while main is blocked", func() bool { return countHook(e.readRecords(), "tick", "every-second") >= before+2 })
	if err := os.Remove(e.records + ".block"); err != nil {
		t.Fatal(err)
	}
	e.idle()

	// disabling alpha stops its schedule
	e.setConfigMap(map[string]string{"beta": "x: 1\n", "alphaEnabled": "false"})
	e.eventually("alpha disabled", func() bool { return !e.op.Status().Modules[0].Enabled })
	e.idle()
	time.Sleep(1500 * time.Millisecond)
	stopped := countHook(e.readRecords(), "alpha", "schedule")
	time.Sleep(2500 * time.Millisecond)
	if n := countHook(e.readRecords(), "alpha", "schedule"); n != stopped {
		t.Fatalf("a disabled module's schedule still fires: %d → %d", stopped, n)
	}
	if !strings.Contains(strings.Join(e.sequence(), " "), "tick:every-second") {
		t.Fatal("no tick recorded")
	}
}

// Auto-healing (docs/lifecycle.md, step 15): a deleted resource of a release
// is noticed by the periodic check and put back by a module run.
func TestAutoHeal(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, twoModules(), nil)
	e.checkInterval = 200 * time.Millisecond
	e.start()
	e.waitReady()
	up, upBeta := e.upgrades("alpha"), e.upgrades("beta")
	if err := client.CoreV1().ConfigMaps(e.ns).Delete(context.Background(), "alpha-values", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("alpha-values restored", func() bool {
		_, err := client.CoreV1().ConfigMaps(e.ns).Get(context.Background(), "alpha-values", metav1.GetOptions{})
		return err == nil
	})
	e.idle()
	if e.upgrades("alpha") != up+1 || e.upgrades("beta") != upBeta {
		t.Fatalf("upgrades: alpha %v → %v, beta %v → %v; want only alpha's, once", up, e.upgrades("alpha"), upBeta, e.upgrades("beta"))
	}
	// the next check finds nothing missing
	e.eventually("the gauge back at 0", func() bool {
		return testutil.ToFloat64(e.op.metrics.AbsentResources.WithLabelValues("alpha")) == 0
	})
}
