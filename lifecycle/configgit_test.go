package lifecycle

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/loader"
)

// configTree is threeModules with the cluster a's config in git.
func configTree(config string) map[string]string {
	return merged(threeModules(), map[string]string{"clusters/a/config.yaml": config})
}

// The config in git through a real operator (docs/operator.md, "Config in
// git"): it is laid over the ConfigMap at start-up, a ConfigMap value under
// a key git sets is config drift (reported, not applied), a new revision's
// config is adopted with the tree and reaches the release, a revision
// whose config disables more modules than the purge guard allows is held,
// and one whose config does not load is refused naming the file and key.
func TestConfigInGit(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, configTree("alpha:\n  x: 1\n"), map[string]string{"beta": "z: b\n"})
	e.commit = "1111111111111111111111111111111111111111"
	e.loaderOpts = []loader.Option{loader.WithClusterConfig(clusterconfig.Settings{Cluster: "a"})}
	e.configure = func(c *Config) { c.Root = e.dir }
	e.start()
	e.waitReady()
	if got := e.releaseValues("alpha")["x"]; got != 1.0 {
		t.Fatalf("alpha's release has x=%v, want git's 1", got)
	}
	if got := e.releaseValues("beta")["z"]; got != "b" {
		t.Fatalf("beta's release has z=%v, want the ConfigMap's b (%v)", got, e.releaseValues("beta"))
	}
	if st := e.op.Status(); len(st.ConfigFiles) != 1 || st.ConfigFiles[0] != "clusters/a/config.yaml" || len(st.ConfigDrift) != 0 ||
		!slices.Equal(st.ClusterKeys, []string{"beta"}) {
		t.Fatalf("status: files %v, drift %v, the cluster's keys %v", st.ConfigFiles, st.ConfigDrift, st.ClusterKeys)
	}

	// a ConfigMap edit of a key git sets: drift, not applied
	upgrades := e.upgrades("alpha")
	e.setConfigMap(map[string]string{"beta": "z: b\n", "alpha": "x: 5\n"})
	e.eventually("the config drift on /status", func() bool { return len(e.op.Status().ConfigDrift) == 1 })
	if d := e.op.Status().ConfigDrift[0]; d.Key != "alpha" || d.Path != "x" || d.File != "clusters/a/config.yaml" {
		t.Fatalf("config drift %+v", d)
	}
	e.eventually("the ConfigDrift Event", func() bool { return e.events("ConfigDrift") == 1 })
	if n := testutil.ToFloat64(e.op.metrics.ConfigDrift.WithLabelValues("alpha")); n != 1 {
		t.Fatalf("addon_operator_config_drift{key=alpha} = %v", n)
	}
	e.idle()
	if got := e.releaseValues("alpha")["x"]; got != 1.0 || e.upgrades("alpha") != upgrades {
		t.Fatalf("the override was applied: x=%v, upgrades %v -> %v", got, upgrades, e.upgrades("alpha"))
	}

	// a commit of the config: the release takes git's new value, the
	// ConfigMap's value is still drift; alpha's section alone changed, so
	// alpha alone runs (docs/operator.md, "Module-scoped reloads")
	betaRuns, gammaRuns, alphaRuns := e.moduleRuns("beta"), e.moduleRuns("gamma"), e.moduleRuns("alpha")
	e.op.TreeChanged(e.checked("2222222222222222222222222222222222222222", configTree("alpha:\n  x: 2\n")))
	e.eventually("alpha's release with x=2", func() bool { return e.releaseValues("alpha")["x"] == 2.0 })
	e.idle()
	if e.moduleRuns("beta") != betaRuns || e.moduleRuns("gamma") != gammaRuns || e.moduleRuns("alpha") == alphaRuns {
		t.Fatalf("a commit of alpha's settings: runs of alpha %d -> %d, beta %d -> %d, gamma %d -> %d",
			alphaRuns, e.moduleRuns("alpha"), betaRuns, e.moduleRuns("beta"), gammaRuns, e.moduleRuns("gamma"))
	}
	if st := e.op.Status(); len(st.ConfigDrift) != 1 || st.Revision != "2222222222222222222222222222222222222222" {
		t.Fatalf("status after the commit: revision %s, drift %v", st.Revision, st.ConfigDrift)
	}

	// a commit that disables two of three modules through the config: held
	e.op.TreeChanged(e.checked("3333333333333333333333333333333333333333", configTree("alpha:\n  x: 2\nbetaEnabled: false\ngammaEnabled: false\n")))
	e.eventually("the purge guard's refusal", func() bool { return strings.Contains(e.op.TreeError(), "purge guard") })
	e.idle()
	if !e.hasRelease("beta") || !e.hasRelease("gamma") || !strings.Contains(e.op.TreeError(), "beta, gamma") {
		t.Fatalf("held: beta %v, gamma %v, error %q", e.hasRelease("beta"), e.hasRelease("gamma"), e.op.TreeError())
	}

	// a config that names a module the tree lacks: refused with its file and key
	_, err := e.op.CheckTree(t.Context(), tree(t, configTree("nopeEnabled: true\n")), "modules", "global-hooks")
	var ce *clusterconfig.Error
	if !errors.As(err, &ce) || ce.File != "clusters/a/config.yaml" || ce.Key != "nopeEnabled" {
		t.Fatalf("CheckTree: %v", err)
	}
	if r := refusedReasonOf(err); !strings.Contains(r, "clusters/a/config.yaml key nopeEnabled") {
		t.Fatalf("commit status reason %q", r)
	}
}

// moduleRuns is how many runs of the module ended.
func (e *env) moduleRuns(module string) uint64 {
	e.t.Helper()
	mfs, err := e.op.metrics.Compact.Gatherer(e.reg).Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "addon_operator_module_run_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "module" && l.GetValue() == module {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// Which modules a config change runs: a section, a mode; global values, a
// flag and unknown keys reload all.
func TestConfigModules(t *testing.T) {
	t.Parallel()
	model := &loader.Model{Modules: []*loader.Module{{Name: "alpha", Key: "alpha"}, {Name: "cert-manager", Key: "certManager"}}}
	base := map[string]string{"alpha": "x: 1\n", "certManager": "y: 1\n", "global": "g: 1\n", "alphaEnabled": "true"}
	for _, tc := range []struct {
		name    string
		edit    map[string]string // keys set ("" deletes)
		modules []string
		all     bool
	}{
		{name: "nothing"},
		{name: "a section", edit: map[string]string{"certManager": "y: 2\n"}, modules: []string{"cert-manager"}},
		{name: "a section removed", edit: map[string]string{"alpha": ""}, modules: []string{"alpha"}},
		{name: "two sections and a mode", edit: map[string]string{"alpha": "x: 2\n", "certManagerMaintenance": "NoResourceReconciliation"}, modules: []string{"alpha", "cert-manager"}},
		{name: "global", edit: map[string]string{"global": "g: 2\n"}, all: true},
		{name: "a flag", edit: map[string]string{"alphaEnabled": "false"}, all: true},
		{name: "a flag added", edit: map[string]string{"certManagerEnabled": "true"}, all: true},
	} {
		after := maps.Clone(base)
		for k, v := range tc.edit {
			if v == "" {
				delete(after, k)
			} else {
				after[k] = v
			}
		}
		modules, all := configModules(model, base, after)
		if all != tc.all || !slices.Equal(modules, tc.modules) {
			t.Errorf("%s: %v, all %v; want %v, all %v", tc.name, modules, all, tc.modules, tc.all)
		}
	}
}
