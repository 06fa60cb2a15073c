package drift

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/objectpatch"
	"github.com/addonops/addon-operator/webhook"
)

// owners is a release of testdata/owners (a CRD without conversion and a
// Deployment) in a namespace of its own, with the real parts of the
// operator that change its objects.
type owners struct {
	t   *testing.T
	ctx context.Context
	ns  string
	cs  kubernetes.Interface
	ext apiextensions.Interface
	h   *kube.Helm
	d   *Detector
}

func installOwners(t *testing.T, name string) *owners {
	t.Helper()
	c := controlPlane(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	o := &owners{t: t, ctx: ctx, ns: "drift-" + name, cs: kubernetes.NewForConfigOrDie(c.Config), ext: apiextensions.NewForConfigOrDie(c.Config)}
	if _, err := o.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = o.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), o.crdName(), metav1.DeleteOptions{})
	})
	var err error
	if o.h, err = kube.NewHelm(c.Config, o.ns, quiet()); err != nil {
		t.Fatal(err)
	}
	o.upgrade("registry.example/api:1")
	if o.d, err = New(c.Config, o.ns, o.h, Options{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *owners) crdName() string { return "widgets." + o.ns + ".example.com" }

func (o *owners) upgrade(image string) {
	o.t.Helper()
	_, err := o.h.Upgrade(o.ctx, kube.Release{Name: "owners", ChartDir: "testdata/owners", ChartHash: image, Key: "owners",
		Values: map[string]any{"owners": map[string]any{"image": image}}})
	if err != nil {
		o.t.Fatal(err)
	}
}

// bindConversion is the webhook registrar pointing the CRD's conversion at
// a hook, as the running tree's kubernetesCustomResourceConversion does.
func (o *owners) bindConversion() {
	o.t.Helper()
	reg := webhook.NewRegistrar(webhook.RegistrarOptions{Client: o.cs, Ext: o.ext, Instance: "drift-test", ConfigurationName: o.ns,
		Conversion: &webhook.Endpoint{URL: "https://127.0.0.1:9443"}, Logger: quiet()})
	err := reg.Apply(o.ctx, webhook.Bindings{Conversion: []webhook.ConversionEntry{{Hook: "convert.sh", Binding: loader.ConversionBinding{CRDName: o.crdName()}}}})
	if err != nil {
		o.t.Fatal(err)
	}
	if s := o.conversion(); s != apiextv1.WebhookConverter {
		o.t.Fatalf("conversion %q after the registrar, want Webhook", s)
	}
}

func (o *owners) conversion() apiextv1.ConversionStrategyType {
	o.t.Helper()
	crd, err := o.ext.ApiextensionsV1().CustomResourceDefinitions().Get(o.ctx, o.crdName(), metav1.GetOptions{})
	if err != nil {
		o.t.Fatal(err)
	}
	return crd.Spec.Conversion.Strategy
}

// patchByHook is a hook's object patch on the chart's Deployment: its
// replicas and a label the chart sets.
func (o *owners) patchByHook() {
	o.t.Helper()
	ops, err := objectpatch.Parse([]byte(`{"operation":"MergePatch","apiVersion":"apps/v1","kind":"Deployment","namespace":"`+o.ns+
		`","name":"api","mergePatch":{"metadata":{"labels":{"tier":"hook"}},"spec":{"replicas":3}}}`), 10)
	if err != nil {
		o.t.Fatal(err)
	}
	a, err := objectpatch.New(controlPlane(o.t).Config, quiet())
	if err != nil {
		o.t.Fatal(err)
	}
	if err := a.Apply(o.ctx, ops); err != nil {
		o.t.Fatal(err)
	}
}

func (o *owners) deployment() *appsv1.Deployment {
	o.t.Helper()
	dep, err := o.cs.AppsV1().Deployments(o.ns).Get(o.ctx, "api", metav1.GetOptions{})
	if err != nil {
		o.t.Fatal(err)
	}
	return dep
}

// wantHookPatch fails unless the hook's replicas and label are in place.
func (o *owners) wantHookPatch(when string) {
	o.t.Helper()
	dep := o.deployment()
	if *dep.Spec.Replicas != 3 || dep.Labels["tier"] != "hook" {
		o.t.Errorf("%s: replicas %d, label tier=%q; want the hook's 3 and \"hook\"", when, *dep.Spec.Replicas, dep.Labels["tier"])
	}
}

// check fails unless a check finds exactly want (Ref → fields).
func (o *owners) check(when string, want map[string][]string) {
	o.t.Helper()
	rep, ok, err := o.d.Check(o.ctx, "owners")
	if err != nil || !ok {
		o.t.Fatalf("%s: Check: %v (release found: %v)", when, err, ok)
	}
	got := map[string][]string{}
	for _, obj := range rep.Objects {
		got[obj.Ref()] = obj.Fields
	}
	if len(got) != len(want) {
		o.t.Fatalf("%s: drift %+v, want %v", when, rep.Objects, want)
	}
	for ref, fields := range want {
		if !slices.Equal(got[ref], fields) {
			o.t.Fatalf("%s: drift %+v, want %v", when, rep.Objects, want)
		}
	}
}

func (o *owners) correct() {
	o.t.Helper()
	if _, err := o.d.Correct(o.ctx, "owners"); err != nil {
		o.t.Fatal(err)
	}
}

// TestDriftRegistrarConversion: a CRD the chart ships with conversion
// None, pointed at a conversion hook by the webhook registrar, is not
// drift, and a correction leaves its conversion alone (the check of the
// whole release used to fail: the dry-run set None beside the registrar's
// webhook settings, which the API server refuses).
func TestDriftRegistrarConversion(t *testing.T) {
	o := installOwners(t, "conversion")
	o.check("after the install", nil)
	o.bindConversion()
	o.check("after the registrar", nil)
	o.correct()
	if s := o.conversion(); s != apiextv1.WebhookConverter {
		t.Fatalf("conversion %q after a correction, want the registrar's Webhook", s)
	}
	o.check("after a correction", nil)
}

// TestDriftHookObjectPatch: a hook's object patch of fields the chart sets
// (a Deployment's replicas and a label) is not drift and not reverted.
func TestDriftHookObjectPatch(t *testing.T) {
	o := installOwners(t, "objectpatch")
	o.patchByHook()
	o.check("after the hook's patch", nil)
	o.correct()
	o.wantHookPatch("after a correction")
}

// TestDriftHandEditBesideOwnParts: with the registrar's conversion and a
// hook's patch in place, hand edits of the Deployment's image and the
// CRD's label (kubectl's manager) are drift, and the correction puts
// exactly those back, as the drift checks' own field manager, leaving the
// conversion and the hook's fields alone.
func TestDriftHandEditBesideOwnParts(t *testing.T) {
	o := installOwners(t, "hand-edit-own")
	o.bindConversion()
	o.patchByHook()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := o.deployment()
		dep.Spec.Template.Spec.Containers[0].Image = "registry.example/api:hand"
		_, err := o.cs.AppsV1().Deployments(o.ns).Update(o.ctx, dep, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	crds := o.ext.ApiextensionsV1().CustomResourceDefinitions()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(o.ctx, o.crdName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.Labels["app"] = "hand"
		_, err = crds.Update(o.ctx, crd, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	o.check("after the hand edits", map[string][]string{
		"Deployment/" + o.ns + "/api":             {"spec.template.spec.containers[0].image"},
		"CustomResourceDefinition/" + o.crdName(): {"metadata.labels.app"},
	})
	o.correct()
	dep := o.deployment()
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example/api:1" {
		t.Errorf("image after the correction: %s, want the chart's", img)
	}
	o.wantHookPatch("after the correction")
	crd, err := crds.Get(o.ctx, o.crdName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.Labels["app"] != "owners" || crd.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		t.Errorf("CRD after the correction: label app=%q, conversion %q; want the chart's label and the registrar's Webhook", crd.Labels["app"], crd.Spec.Conversion.Strategy)
	}
	// who wrote what: Helm, the hook, the correction, each under its name
	managers := map[string]bool{}
	for _, e := range dep.ManagedFields {
		managers[e.Manager+"/"+string(e.Operation)] = true
	}
	for _, m := range []string{kube.FieldManagerHelm + "/Update", kube.FieldManagerObjectPatch + "/Update", kube.FieldManagerDrift + "/Apply"} {
		if !managers[m] {
			t.Errorf("Deployment's managedFields lack %s: %v", m, managers)
		}
	}
	o.check("after the correction", nil)
}

// TestDriftAfterUpgradeFromEarlierVersion: a release an earlier version
// deployed (every write under the one name "addon-operator": Helm's, and
// the registrar's or a hook's change to a chart's field) is not drift
// after the upgrade; Helm's next upgrade, under its own name, works on
// top of it; a hand edit is still drift.
func TestDriftAfterUpgradeFromEarlierVersion(t *testing.T) {
	o := installOwners(t, "legacy")
	deployments := o.cs.AppsV1().Deployments(o.ns)
	// the earlier version's state: Helm's fields under "addon-operator"
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := o.deployment()
		for i := range dep.ManagedFields {
			if dep.ManagedFields[i].Manager == kube.FieldManagerHelm {
				dep.ManagedFields[i].Manager = kube.FieldManagerLegacy
			}
		}
		_, err := deployments.Update(o.ctx, dep, metav1.UpdateOptions{FieldManager: "test-migrate"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// and a hook's change of a field the chart sets, under that name too
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := o.deployment()
		dep.Spec.Replicas = ptrTo(int32(3))
		_, err := deployments.Update(o.ctx, dep, metav1.UpdateOptions{FieldManager: kube.FieldManagerLegacy})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dep := o.deployment()
	var legacy bool
	for _, e := range dep.ManagedFields {
		legacy = legacy || e.Manager == kube.FieldManagerLegacy
		if e.Manager == kube.FieldManagerHelm {
			t.Fatalf("Helm's entry still there after the rename: %+v", dep.ManagedFields)
		}
	}
	if !legacy {
		t.Fatalf("no %s entry: %+v", kube.FieldManagerLegacy, dep.ManagedFields)
	}

	o.check("after the upgrade of the operator", nil)
	o.correct()
	if r := *o.deployment().Spec.Replicas; r != 3 {
		t.Errorf("replicas %d after a correction, want the earlier version's 3", r)
	}

	o.upgrade("registry.example/api:2")
	if img := o.deployment().Spec.Template.Spec.Containers[0].Image; img != "registry.example/api:2" {
		t.Fatalf("image after Helm's upgrade: %s", img)
	}
	o.check("after Helm's upgrade", nil)

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := o.deployment()
		dep.Spec.Template.Spec.Containers[0].Image = "registry.example/api:hand"
		_, err := deployments.Update(o.ctx, dep, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	o.check("after a hand edit", map[string][]string{"Deployment/" + o.ns + "/api": {"spec.template.spec.containers[0].image"}})
	o.correct()
	if img := o.deployment().Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":2") {
		t.Errorf("image after the correction: %s, want the chart's", img)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestLeftAlone: which conflicts are pruned (not drift): a field whose
// owners are all other controllers, subresource writers or the operator's
// own parts; one that any hand edit owns too is drift.
func TestLeftAlone(t *testing.T) {
	ignore := map[string]bool{"kube-controller-manager": true}
	for _, m := range kube.OwnFieldManagers {
		ignore[m] = true
	}
	for _, tc := range []struct {
		name string
		in   []Conflict
		want []string // String() of the pruned ones
	}{
		{"registrar", []Conflict{{Field: ".spec.conversion.strategy", Manager: kube.FieldManagerWebhooks}},
			[]string{"spec.conversion.strategy (addon-operator-webhooks)"}},
		{"object patch", []Conflict{{Field: ".spec.replicas", Manager: kube.FieldManagerObjectPatch}},
			[]string{"spec.replicas (addon-operator-objectpatch)"}},
		{"earlier version", []Conflict{{Field: ".spec.replicas", Manager: kube.FieldManagerLegacy}},
			[]string{"spec.replicas (addon-operator)"}},
		{"subresource", []Conflict{{Field: ".spec.replicas", Manager: "keda", Subresource: "scale"}},
			[]string{"spec.replicas (keda, /scale)"}},
		{"hand edit", []Conflict{{Field: ".spec.replicas", Manager: "kubectl-edit"}}, nil},
		{"Helm's own is not left alone", []Conflict{{Field: ".spec.replicas", Manager: kube.FieldManagerHelm}}, nil},
		{"a hand edit beside a hook on one field", []Conflict{
			{Field: ".spec.replicas", Manager: kube.FieldManagerObjectPatch},
			{Field: ".spec.replicas", Manager: "kubectl-edit"},
			{Field: `.metadata.labels.tier`, Manager: kube.FieldManagerObjectPatch},
		}, []string{"metadata.labels.tier (addon-operator-objectpatch)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range leftAlone(tc.in, ignore) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("left alone %q, want %q", got, tc.want)
			}
		})
	}
}
