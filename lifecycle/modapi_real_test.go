package lifecycle

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/internal/batchtest"
)

// Real parts (an API server, Helm, a compiled module-sdk style executable)
// for the module API of module-sdk: the settings check, readiness hooks
// and the enabled script's reason (docs/operator.md, "Settings checks",
// "Readiness hooks").

// TestSettingsCheckRefusesConfigMapEdit: an edit of the values ConfigMap
// that the module's settings check refuses is refused with the check's
// message, as a schema refusal is: logged, counted, and the release keeps
// running with the last good values; an edit it accepts (with a warning)
// reaches the chart.
func TestSettingsCheckRefusesConfigMapEdit(t *testing.T) {
	e := setup(t, merged(withPrefix("modules/001-sized", moduleChart("sized", "sized")),
		map[string]string{"modules/001-sized/values.yaml": "sizedEnabled: true\n"}), map[string]string{"sized": "replicas: 2\n"})
	batchtest.Build(t, filepath.Join(e.dir, "modules", "001-sized", "hooks"), "check", batchtest.Options{Config: checkOnly})
	logs := &logLines{}
	e.configure = func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) }
	e.start()
	e.waitReady()
	assertJSON(t, e.releaseValues("sized"), `{"replicas":2}`)
	upgrades := e.upgrades("sized")

	e.setConfigMap(map[string]string{"sized": "replicas: 5\n"})
	e.eventually("the edit refused with the check's message", func() bool {
		return strings.Contains(logs.String(), "ConfigMap change refused") && strings.Contains(logs.String(), "replicas: at most 3, got 5")
	})
	e.idle()
	if got := testutil.ToFloat64(e.op.metrics.ConfigValuesErrors); got != 1 {
		t.Fatalf("refused edits counted: %v", got)
	}
	if e.upgrades("sized") != upgrades {
		t.Fatal("a refused edit reached Helm")
	}
	assertJSON(t, e.releaseValues("sized"), `{"replicas":2}`)
	assertJSON(t, e.op.trees.Load().ConfigData, `{"sized":"replicas: 2\n"}`)

	e.setConfigMap(map[string]string{"sized": "replicas: 3\n"})
	e.eventually("the accepted edit in the chart", func() bool {
		b, _ := json.Marshal(e.releaseValues("sized"))
		return string(b) == `{"replicas":3}`
	})
	if !strings.Contains(logs.String(), "replicas: 3 is the most allowed") {
		t.Fatal("the check's warning was not logged")
	}
}

// TestModuleSDKOnStatus: /status and /debug/modules show a module's
// readiness hook's last answer (module-sdk's `hook ready`, run on its
// schedule) and, for a module its enabled script disabled, the reason the
// script gave.
func TestModuleSDKOnStatus(t *testing.T) {
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := setup(t, merged(
		withPrefix("modules/001-probed", moduleChart("probed", "probed")),
		chartOnly("002-off"),
		map[string]string{
			"modules/values.yaml":     "probedEnabled: true\noffEnabled: true\n",
			"modules/002-off/enabled": "#!/bin/sh\necho false > \"$MODULE_ENABLED_RESULT\"\necho 'needs a GPU node' > \"$MODULE_ENABLED_REASON\"\n",
		}), nil)
	readiness := `{"version":"v1","hooks":[],"readiness":{"configVersion":"v1",
	 "metadata":{"name":"readiness","path":"common-hooks/readiness"},
	 "schedule":[{"name":"probed-moduleReadinessSchedule","crontab":"* * * * * *"}]}}`
	batchtest.Build(t, filepath.Join(e.dir, "modules", "001-probed", "hooks"), "sdk", batchtest.Options{Config: readiness, ReadyProbe: probe})
	e.start()
	e.waitReady()
	srv := httptest.NewServer(e.op.Handler(HTTPOptions{}))
	defer srv.Close()
	module := func(path, name string) ModuleStatus {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct{ Modules []ModuleStatus }
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Modules {
			if m.Name == name {
				return m
			}
		}
		t.Fatalf("%s: no module %s", path, name)
		return ModuleStatus{}
	}
	for _, path := range []string{"/status", "/debug/modules"} {
		if off := module(path, "off"); off.Enabled || off.DisabledReason != "needs a GPU node" {
			t.Fatalf("%s: off = %+v, want disabled for its reason", path, off)
		}
	}
	e.eventually("probed ready on /status", func() bool {
		r := module("/status", "probed").Readiness
		return r != nil && r.Ready
	})
	if err := os.WriteFile(probe, []byte("database is not reachable"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.eventually("probed not ready on /status, with the probe's message", func() bool {
		r := module("/status", "probed").Readiness
		return r != nil && !r.Ready && r.Message == "execute: database is not reachable"
	})
	if r := module("/debug/modules", "probed").Readiness; r == nil || r.Ready {
		t.Fatalf("/debug/modules readiness = %+v", r)
	}
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.eventually("probed ready again", func() bool {
		r := module("/status", "probed").Readiness
		return r != nil && r.Ready && r.Message == ""
	})
}
