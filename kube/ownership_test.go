package kube

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

// testCRD is a minimal CRD of kind Widget in group, with a description
// that tells copies apart.
func testCRD(group, description string, labels map[string]string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Labels: labels},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Description: description}},
			}},
		},
	}
}

// moduleWithCRD writes a module directory whose crds/ holds crd.
func moduleWithCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	dir := t.TempDir()
	b, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crds", "widgets.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCRDOwnership applies a module's CRD over what the cluster has: a
// CRD another tool installed (or an earlier version of this operator, or
// another module, or another instance) is left as it is, with an error
// that names it and says whose it is; the original addon-operator's
// (heritage label) is taken over; the module's own is updated.
func TestCRDOwnership(t *testing.T) {
	t.Parallel()
	apiext := func(t *testing.T) *CRDs {
		c, err := NewCRDs(restCfg, WithInstance("ops.addon-operator"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ours := map[string]string{LabelManagedBy: ManagedByValue, LabelInstance: "ops.addon-operator"}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m {
			out[a] = b
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		existing map[string]string // labels of the CRD in the cluster; nil: none there
		want     string            // in the error; "" for an update
	}{
		{name: "missing", existing: nil},
		{name: "foreign", existing: map[string]string{"app": "other-tool"}, want: "is not ours"},
		{name: "unlabelled", existing: map[string]string{}, want: "kubectl label crd widgets."},
		{name: "other module", existing: with(ours, LabelModule, "gadgets"), want: "modules gadgets and widgets both ship it"},
		{name: "other instance", existing: map[string]string{LabelManagedBy: ManagedByValue, LabelInstance: "other.addon-operator", LabelModule: "widgets"}, want: `operator instance "other.addon-operator"`},
		{name: "original", existing: map[string]string{LabelHeritage: HeritageValue}},
		{name: "own", existing: with(ours, LabelModule, "widgets")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := fmt.Sprintf("own%d.example.com", nsSeq.Add(1))
			c := apiext(t)
			api := c.client.ApiextensionsV1().CustomResourceDefinitions()
			if tc.existing != nil {
				if _, err := api.Create(t.Context(), testCRD(group, "theirs", tc.existing), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := c.Ensure(t.Context(), "widgets", moduleWithCRD(t, testCRD(group, "the module's", map[string]string{"from": "file"})), nil)
			got, gerr := api.Get(t.Context(), "widgets."+group, metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			desc := got.Spec.Versions[0].Schema.OpenAPIV3Schema.Description
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "widgets."+group) || !errors.Is(err, ErrCRDNotOurs) {
					t.Fatalf("Ensure = %d, %v; want an error naming the CRD and %q", n, err, tc.want)
				}
				if desc != "theirs" || got.Labels[LabelModule] != tc.existing[LabelModule] {
					t.Fatalf("CRD rewritten: %q, labels %v", desc, got.Labels)
				}
				return
			}
			if err != nil || n != 1 {
				t.Fatalf("Ensure = %d, %v", n, err)
			}
			if desc != "the module's" || got.Labels[LabelModule] != "widgets" || got.Labels[LabelInstance] != "ops.addon-operator" ||
				got.Labels[LabelManagedBy] != ManagedByValue || got.Labels["from"] != "file" {
				t.Fatalf("CRD = %q, labels %v", desc, got.Labels)
			}
		})
	}
}

// TestCRDTwoModules: the second module that ships a CRD the first applied
// gets an error naming both, and the first module's copy stays.
func TestCRDTwoModules(t *testing.T) {
	t.Parallel()
	group := fmt.Sprintf("two%d.example.com", nsSeq.Add(1))
	c, err := NewCRDs(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(t.Context(), "alpha", moduleWithCRD(t, testCRD(group, "alpha's", nil)), nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.Ensure(t.Context(), "beta", moduleWithCRD(t, testCRD(group, "beta's", nil)), nil)
	if err == nil || !strings.Contains(err.Error(), "modules alpha and beta both ship it") {
		t.Fatalf("second module's Ensure = %v", err)
	}
	got, err := c.client.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "widgets."+group, metav1.GetOptions{})
	if err != nil || got.Spec.Versions[0].Schema.OpenAPIV3Schema.Description != "alpha's" {
		t.Fatalf("CRD after beta: %v, %v", got, err)
	}
	// alpha applies it again unchanged: nothing to write
	if n, err := c.Ensure(t.Context(), "alpha", moduleWithCRD(t, testCRD(group, "alpha's", nil)), nil); err != nil || n != 0 {
		t.Fatalf("alpha again: %d, %v", n, err)
	}
}

// TestHelmInstancesInOneNamespace runs two operator instances (two values
// ConfigMaps) in one namespace: each lists, purges and deletes only its
// own releases; a release of an earlier version without the instance
// label is claimed by the instance whose module it is, and never purged;
// the original's release is adopted only by the instance that runs its
// module, and once adopted is not the other's.
func TestHelmInstancesInOneNamespace(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	newInstance := func(cm string) *Helm {
		h, err := NewHelm(restCfg, ns, quietLogger(), WithInstance(InstanceID(ns, cm)))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := newInstance("ops-a"), newInstance("ops-b")
	chartDir := testChart(t, strings.ReplaceAll(goodManifest, "name: demo", "name: {{ .Release.Name }}"))
	rel := func(name string) Release {
		return Release{Name: name, ChartDir: chartDir, Values: map[string]any{"demo": map[string]any{"v": "1"}}}
	}
	if _, err := a.Upgrade(t.Context(), rel("alpha")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Upgrade(t.Context(), rel("beta")); err != nil {
		t.Fatal(err)
	}
	if names, err := a.Releases(t.Context()); err != nil || len(names) != 1 || names[0] != "alpha" {
		t.Fatalf("a's releases = %v, %v", names, err)
	}
	// a's reload finds beta in no module of its tree: the purge leaves it
	if removed, err := a.Purge(t.Context(), "beta"); err != nil || removed {
		t.Fatalf("a purged b's release: %v, %v", removed, err)
	}
	if has, err := a.Has(t.Context(), "beta"); err != nil || has {
		t.Fatalf("a has b's release: %v, %v", has, err)
	}
	if _, err := a.Uninstall(t.Context(), "beta"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), InstanceID(ns, "ops-b")) {
		t.Fatalf("a's uninstall of b's release: %v", err)
	}
	if _, err := a.Upgrade(t.Context(), rel("beta")); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("a's upgrade of b's release: %v", err)
	}
	if _, err := helmtest.Last(restCfg, ns, "beta"); err != nil {
		t.Fatalf("b's release gone: %v", err)
	}

	// releases written before instances were labelled, and the original's
	cfg, err := helmtest.Config(restCfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]map[string]string{
		"legacy": {LabelManagedBy: ManagedByValue}, "stale": {LabelManagedBy: ManagedByValue}, "original": {LabelOriginalChecksum: "abc"},
	} {
		inst := action.NewInstall(cfg)
		inst.ReleaseName, inst.Namespace, inst.Labels = name, ns, labels
		if _, err := inst.Run(&chart.Chart{Metadata: &chart.Metadata{Name: name, Version: "0.1.0", APIVersion: "v2"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*Helm{a, b} {
		if names, _ := h.Releases(t.Context()); len(names) != 1 {
			t.Fatalf("unlabelled releases listed: %v", names)
		}
		for _, name := range []string{"legacy", "stale", "original"} {
			if removed, err := h.Purge(t.Context(), name); err != nil || removed {
				t.Fatalf("purge of %s: %v, %v", name, removed, err)
			}
		}
	}
	// b's tree has the modules legacy and original: b claims them
	for _, name := range []string{"legacy", "original"} {
		if res, err := b.Upgrade(t.Context(), rel(name)); err != nil || res.Reason != "adopted" {
			t.Fatalf("b adopts %s: %+v, %v", name, res, err)
		}
		last, err := helmtest.Last(restCfg, ns, name)
		if err != nil || last.Labels[LabelInstance] != InstanceID(ns, "ops-b") {
			t.Fatalf("%s after b's upgrade: %v, %v", name, last, err)
		}
		if _, err := a.Upgrade(t.Context(), rel(name)); !errors.Is(err, ErrNotOurs) {
			t.Fatalf("a upgraded %s after b adopted it: %v", name, err)
		}
	}
	if names, _ := b.Releases(t.Context()); strings.Join(names, ",") != "beta,legacy,original" {
		t.Fatalf("b's releases = %v", names)
	}
	if _, err := helmtest.Last(restCfg, ns, "stale"); err != nil {
		t.Fatalf("an unlabelled release of no module's was removed: %v", err)
	}
}

// TestHelmClaimsUnchangedLegacyRelease: an unchanged release of an earlier
// version gets the instance label without a new revision.
func TestHelmClaimsUnchangedLegacyRelease(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}}}
	if _, err := h.Upgrade(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	last, err := h.cfg.Releases.Last("demo")
	if err != nil {
		t.Fatal(err)
	}
	delete(last.Labels, LabelInstance) // as the previous version wrote it
	if err := h.cfg.Releases.Update(last); err != nil {
		t.Fatal(err)
	}
	h.snapshot.invalidate()
	if names, _ := h.Releases(t.Context()); len(names) != 0 {
		t.Fatalf("unlabelled release listed: %v", names)
	}
	if res, err := h.Upgrade(t.Context(), r); err != nil || res.Upgraded || res.Revision != 1 {
		t.Fatalf("unchanged legacy release: %+v, %v", res, err)
	}
	if names, _ := h.Releases(t.Context()); len(names) != 1 {
		t.Fatalf("claimed release not listed: %v", names)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
