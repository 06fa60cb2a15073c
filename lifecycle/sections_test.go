package lifecycle

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/preview"
)

// pushgateway is a module whose config schema requires a key, as
// Deckhouse's prometheus-pushgateway does.
func pushgateway() map[string]string {
	return merged(chartOnly("002-prometheus-pushgateway"), withPrefix("modules/002-prometheus-pushgateway", map[string]string{
		"openapi/config-values.yaml": "type: object\nrequired: [instances]\nproperties:\n  instances: {type: array, items: {type: string}}\n",
	}))
}

// Only the sections of enabled modules are validated (docs/operator.md,
// "Values"): an empty ConfigMap loads with a disabled module whose schema
// has `required`, and so does a bad section of it; a ConfigMap that
// enables it with a bad section is refused naming the module, and the last
// good state keeps running; a valid section then enables it.
func TestStepsSectionsOfEnabledModules(t *testing.T) {
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"), pushgateway())
	helm := newFakeHelm(nil)
	u := startUnit(t, files, nil, helm)
	if !u.state("alpha").Enabled || u.state("prometheus-pushgateway").Enabled {
		t.Fatalf("status %+v", u.op.Status().Modules)
	}
	if _, _, err := u.op.trees.SetConfig(map[string]string{"prometheusPushgateway": "instances: 5\n"}, "", nil); err != nil {
		t.Fatalf("a disabled module's section refused the ConfigMap: %v", err)
	}

	bad := map[string]string{"prometheusPushgatewayEnabled": "true", "prometheusPushgateway": "instances: 5\n"}
	before := maps.Clone(u.op.trees.Load().ConfigData)
	_, _, err := u.op.trees.SetConfig(bad, "", nil)
	if err == nil || !strings.Contains(err.Error(), "module prometheus-pushgateway") || !strings.Contains(err.Error(), "prometheusPushgateway.instances in body must be of type array") {
		t.Fatalf("enabling with a bad section: err = %v", err)
	}
	if got := u.op.trees.Load().ConfigData; !maps.Equal(got, before) {
		t.Fatalf("refused data adopted: %v", got)
	}
	calls := len(helm.called())
	u.config.set(bad) // the same through the watch: nothing runs
	u.idle()
	if got := helm.called()[calls:]; len(got) != 0 || u.state("prometheus-pushgateway").Enabled || !u.state("alpha").Enabled {
		t.Fatalf("after a refused edit: Helm calls %v, status %+v", got, u.op.Status().Modules)
	}

	u.config.set(map[string]string{"prometheusPushgatewayEnabled": "true", "prometheusPushgateway": "instances: [a]\n"})
	u.until("prometheus-pushgateway installed", func() bool { return slices.Contains(helm.called(), "upgrade prometheus-pushgateway") })
	u.idle()
	if st := u.state("prometheus-pushgateway"); !st.Enabled || st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	// now that it is enabled, its section is validated on every edit
	if _, _, err := u.op.trees.SetConfig(map[string]string{"prometheusPushgateway": "instances: 5\n"}, "", nil); err == nil || !strings.Contains(err.Error(), "module prometheus-pushgateway") {
		t.Fatalf("a bad section of an enabled module: err = %v", err)
	}
}

// A module an enabled script enables has its section checked by
// discovery: a bad one leaves the module as it was, Failed with an error
// naming it, while the rest converges; a fix of the section enables it. A
// module a values file enables (no script) is known to be enabled before
// discovery, so a new tree that enables it with a bad section is refused
// naming it, and the running tree stays.
func TestStepsDiscoveryChecksEnabledSections(t *testing.T) {
	alphaOnly := map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}
	enabledByFile := map[string]string{"modules/values.yaml": "alphaEnabled: true\nprometheusPushgatewayEnabled: true\n"}
	enabledByScript := merged(enabledByFile,
		withPrefix("modules/002-prometheus-pushgateway", map[string]string{"enabled": "#!/bin/sh\necho true > \"$MODULE_ENABLED_RESULT\"\n"}))
	tests := []struct {
		name string
		// start is the tree at start-up, change (when set) the tree the
		// operator is given next
		start, change map[string]string
		treeRefused   bool
	}{
		{name: "enabled script at start-up", start: enabledByScript},
		{name: "a new tree's enabled script enables it", start: alphaOnly, change: enabledByScript},
		{name: "a new tree's values file enables it", start: alphaOnly, change: enabledByFile, treeRefused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			helm := newFakeHelm(nil)
			u := startUnit(t, merged(tt.start, chartOnly("001-alpha"), pushgateway()), nil, helm)
			if tt.change != nil {
				writeFiles(t, u.dir, tt.change)
				u.op.TreeChanged(Revision{})
				u.until("the new tree judged", func() bool {
					return u.state("prometheus-pushgateway").State == StateFailed || u.op.Status().TreeError != ""
				})
				u.idle()
			}
			if tt.treeRefused {
				if te := u.op.Status().TreeError; !strings.Contains(te, "module prometheus-pushgateway") || !strings.Contains(te, "prometheusPushgateway.instances in body is required") {
					t.Fatalf("tree error %q", te)
				}
				if st := u.state("prometheus-pushgateway"); st.Enabled || !u.state("alpha").Enabled || slices.Contains(helm.called(), "upgrade prometheus-pushgateway") {
					t.Fatalf("status %+v, Helm calls %v", u.op.Status().Modules, helm.called())
				}
				return
			}
			if te := u.op.Status().TreeError; te != "" {
				t.Fatalf("the tree was refused: %s", te)
			}
			st := u.state("prometheus-pushgateway")
			if st.Enabled || st.State != StateFailed || !strings.Contains(st.LastError, "prometheus-pushgateway") || !strings.Contains(st.LastError, "prometheusPushgateway.instances in body is required") {
				t.Fatalf("prometheus-pushgateway: %+v", st)
			}
			if slices.Contains(helm.called(), "upgrade prometheus-pushgateway") || !slices.Contains(helm.called(), "upgrade alpha") {
				t.Fatalf("Helm calls %v", helm.called())
			}
			// a valid section: discovery runs again and enables it
			u.config.set(map[string]string{"prometheusPushgateway": "instances: [a]\n"})
			u.until("prometheus-pushgateway installed", func() bool { return slices.Contains(helm.called(), "upgrade prometheus-pushgateway") })
			u.idle()
			if st := u.state("prometheus-pushgateway"); !st.Enabled || st.State != StateReady {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// On the real parts (a real API server's ConfigMap, real Helm): a
// Deckhouse-like tree with an enabled module whose config uses oneOf
// branches that list different properties, and a disabled module whose
// schema requires a key, starts with an empty ConfigMap; enabling the
// disabled one with a bad section is refused and the running release
// stays; a valid section installs it.
func TestSectionsOfEnabledModulesReal(t *testing.T) {
	cluster(t)
	cp, err := os.ReadFile("../values/testdata/controlplane-openapi/config-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := merged(map[string]string{"modules/values.yaml": "istioEnabled: true\n"},
		withPrefix("modules/001-istio", moduleChart("istio", "istio")),
		withPrefix("modules/001-istio", map[string]string{"openapi/config-values.yaml": string(cp)}),
		withPrefix("modules/002-prometheus-pushgateway", moduleChart("prometheus-pushgateway", "prometheusPushgateway")),
		withPrefix("modules/002-prometheus-pushgateway", map[string]string{
			"openapi/config-values.yaml": "type: object\nrequired: [instances]\nproperties:\n  instances: {type: array, items: {type: string}}\n",
		}))
	e := setup(t, files, map[string]string{"istio": "controlPlane:\n  resourcesManagement:\n    mode: VPA\n    vpa: {mode: Auto}\n"})
	e.start()
	e.waitReady()
	if !e.hasRelease("istio") || e.hasRelease("prometheus-pushgateway") {
		t.Fatalf("releases: istio %v, prometheus-pushgateway %v", e.hasRelease("istio"), e.hasRelease("prometheus-pushgateway"))
	}
	assertJSON(t, e.releaseValues("istio")["controlPlane"].(map[string]any)["resourcesManagement"],
		`{"mode":"VPA","vpa":{"mode":"Auto","cpu":{"min":"50m","max":"2"}},"static":{"requests":{"cpu":"100m"}}}`)

	refused := testutil.ToFloat64(e.op.metrics.ConfigValuesErrors)
	istio := e.upgrades("istio")
	e.setConfigMap(map[string]string{"istio": e.configMap()["istio"], "prometheusPushgatewayEnabled": "true", "prometheusPushgateway": "instances: 5\n"})
	e.eventually("the edit refused", func() bool { return testutil.ToFloat64(e.op.metrics.ConfigValuesErrors) > refused })
	e.idle()
	if e.hasRelease("prometheus-pushgateway") || !e.hasRelease("istio") || e.upgrades("istio") != istio {
		t.Fatalf("after a refused edit: prometheus-pushgateway %v, istio %v (upgrades %v, was %v)",
			e.hasRelease("prometheus-pushgateway"), e.hasRelease("istio"), e.upgrades("istio"), istio)
	}

	e.setConfigMap(map[string]string{"istio": e.configMap()["istio"], "prometheusPushgatewayEnabled": "true", "prometheusPushgateway": "instances: [a]\n"})
	e.eventually("prometheus-pushgateway installed", func() bool { return e.hasRelease("prometheus-pushgateway") })
	assertJSON(t, e.releaseValues("prometheus-pushgateway"), `{"instances":["a"]}`)
}

// A preview checks the section of a module a values file enables, naming
// it; a disabled module's section refuses nothing.
func TestPreviewChecksEnabledSections(t *testing.T) {
	ld := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false))
	render := func(files, data map[string]string) error {
		dir := tree(t, merged(files, chartOnly("001-alpha"), pushgateway()))
		_, err := preview.Render(t.Context(), preview.Options{Loader: ld, Root: dir, ModulesDir: dir + "/modules", GlobalHooksDir: dir + "/global-hooks", Config: data, Namespace: "default", Logger: quiet()})
		return err
	}
	if err := render(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, map[string]string{"prometheusPushgateway": "instances: 5\n"}); err != nil {
		t.Fatalf("a disabled module's section refused the preview: %v", err)
	}
	err := render(map[string]string{"modules/values.yaml": "alphaEnabled: true\nprometheusPushgatewayEnabled: true\n"}, nil)
	if err == nil || !strings.Contains(err.Error(), "module prometheus-pushgateway") || !strings.Contains(err.Error(), "instances in body is required") {
		t.Fatalf("err = %v", err)
	}
}

// A module its enabled script enables whose section discovery refuses is
// left as it was (docs/operator.md, "Values"): one enabled before (by the
// last discovery, or with a release at start-up) stays in the enabled
// list, so global.enabledModules does not change for the other charts,
// and is neither run with the bad section nor deleted. While it stays
// refused, a tree change inside another module's directory runs that
// module alone, not every module.
func TestStepsRefusedSectionLeavesModuleAsItWas(t *testing.T) {
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\ngammaEnabled: true\nprometheusPushgatewayEnabled: true\n"},
		chartOnly("001-alpha"), pushgateway(), chartOnly("003-gamma"),
		withPrefix("modules/002-prometheus-pushgateway", map[string]string{"enabled": "#!/bin/sh\necho true > \"$MODULE_ENABLED_RESULT\"\n"}))
	bad := map[string]string{"prometheusPushgateway": "instances: 5\n"}
	tests := []struct {
		name string
		// release: it has one at start-up; else discovery enables it,
		// then its section turns bad
		release bool
	}{
		{name: "a release at start-up", release: true},
		{name: "enabled by the last discovery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			releases := map[string]fakeRelease{}
			config := map[string]string{"prometheusPushgateway": "instances: [a]\n"}
			if tt.release {
				releases["prometheus-pushgateway"] = fakeRelease{ours: true}
				config = bad
			}
			helm := newFakeHelm(releases)
			u := startUnit(t, files, config, helm)
			if !tt.release {
				u.until("prometheus-pushgateway installed", func() bool { return u.state("prometheus-pushgateway").State == StateReady })
				// a section that got past admission (none validates it
				// now), as one written while the operator was down does
				u.op.trees.Load().Store.Sections().SetActive(nil)
				if _, _, err := u.op.trees.SetConfig(bad, "", nil); err != nil {
					t.Fatal(err)
				}
				u.op.steps.queueReloadAll()
				u.until("prometheus-pushgateway refused", func() bool { return u.state("prometheus-pushgateway").State == StateFailed })
				u.idle()
			}
			want := []string{"alpha", "prometheus-pushgateway", "gamma"}
			if got := u.op.steps.modules.EnabledList(); !slices.Equal(got, want) {
				t.Fatalf("enabled list %v, want %v", got, want)
			}
			st := u.state("prometheus-pushgateway")
			if st.State != StateFailed || !strings.Contains(st.LastError, "prometheusPushgateway.instances in body must be of type array") {
				t.Fatalf("prometheus-pushgateway: %+v", st)
			}
			runs := 0
			for _, c := range helm.called() {
				if strings.HasSuffix(c, " prometheus-pushgateway") && c != "upgrade prometheus-pushgateway" {
					t.Fatalf("Helm calls %v", helm.called())
				}
				if c == "upgrade prometheus-pushgateway" {
					runs++
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tt.release]; runs != want {
				t.Fatalf("prometheus-pushgateway upgraded %d times, want %d: %v", runs, want, helm.called())
			}

			calls := len(helm.called())
			writeFiles(t, u.dir, map[string]string{"modules/001-alpha/values.yaml": "alpha:\n  answer: 42\n"})
			u.op.TreeChanged(Revision{})
			u.until("alpha run", func() bool { return slices.Contains(helm.called()[calls:], "upgrade alpha") })
			u.idle()
			if got := helm.called()[calls:]; !slices.Equal(got, []string{"upgrade alpha"}) {
				t.Fatalf("a change of alpha alone: Helm calls %v, want alpha's alone", got)
			}
			if got := u.op.steps.modules.EnabledList(); !slices.Equal(got, want) {
				t.Fatalf("enabled list %v, want %v", got, want)
			}
		})
	}
}
