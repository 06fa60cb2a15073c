package webhook

import (
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/loader"
)

var (
	client kubernetes.Interface
	ext    apiextensions.Interface
	shared = testenv.Shared{Setup: func(cp *testenv.ControlPlane) {
		client = kubernetes.NewForConfigOrDie(cp.Config)
		ext = apiextensions.NewForConfigOrDie(cp.Config)
	}}
)

func TestMain(m *testing.M) { os.Exit(shared.Main(m)) }

func crd(name string, conversion *apiextv1.CustomResourceConversion, labels map[string]string) *apiextv1.CustomResourceDefinition {
	plural, group, _ := strings.Cut(name, ".")
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextv1.NamespaceScoped, Conversion: conversion,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: plural, Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}},
		},
	}
}

// Ownership (docs/security.md): a configuration or a CRD conversion that
// another owner wrote is never changed or removed, and the error names the
// hook; what this instance wrote is updated and removed.
func TestRegistrarOwnership(t *testing.T) {
	shared.Get(t)
	ctx := t.Context()
	ep := &Endpoint{URL: "https://127.0.0.1:1"}
	reg := NewRegistrar(RegistrarOptions{Client: client, Ext: ext, Instance: "ns.one", ConfigurationName: "foreign-hooks", Admission: ep, Conversion: ep, Logger: quiet})
	vwc := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	foreign := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "foreign-hooks"}}
	if _, err := vwc.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	url := "https://elsewhere.example.com/convert"
	others := &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter, Webhook: &apiextv1.WebhookConversion{
		ClientConfig: &apiextv1.WebhookClientConfig{URL: &url}, ConversionReviewVersions: []string{"v1"}}}
	for _, c := range []*apiextv1.CustomResourceDefinition{crd("others.own.test", others, nil), crd("mine.own.test", nil, nil)} {
		if _, err := crds.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	admission := AdmissionEntry{Hook: "hooks/a.sh", Binding: loader.AdmissionBinding{Name: "a.own.test", FailurePolicy: admissionv1.Ignore, SideEffects: admissionv1.SideEffectClassNone, TimeoutSeconds: 5,
		Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{"own.test"}, APIVersions: []string{"v1"}, Resources: []string{"things"}}}}}}
	convert := func(hook, crd string) ConversionEntry {
		return ConversionEntry{Hook: hook, Binding: loader.ConversionBinding{Name: "c", CRDName: crd, Conversions: []loader.ConversionRule{{FromVersion: "v1", ToVersion: "v2"}}}}
	}
	err := reg.Apply(ctx, Bindings{Admission: []AdmissionEntry{admission}, Conversion: []ConversionEntry{convert("hooks/b.sh", "others.own.test"), convert("hooks/c.sh", "mine.own.test")}})
	for _, want := range []string{"ValidatingWebhookConfiguration foreign-hooks exists and is not this operator's", "hook hooks/b.sh: conversion of CRD others.own.test: it has a conversion webhook this operator did not set"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if got, _ := vwc.Get(ctx, "foreign-hooks", metav1.GetOptions{}); len(got.Webhooks) != 0 {
		t.Errorf("the foreign configuration was changed: %+v", got.Webhooks)
	}
	if got, _ := crds.Get(ctx, "others.own.test", metav1.GetOptions{}); *got.Spec.Conversion.Webhook.ClientConfig.URL != url {
		t.Errorf("another's conversion was changed: %+v", got.Spec.Conversion)
	}
	mine, _ := crds.Get(ctx, "mine.own.test", metav1.GetOptions{})
	if mine.Spec.Conversion.Strategy != apiextv1.WebhookConverter || *mine.Spec.Conversion.Webhook.ClientConfig.URL != "https://127.0.0.1:1/conversion/mine.own.test" || mine.Labels[LabelConversion] != "ns.one" {
		t.Errorf("mine.own.test = %+v %v", mine.Spec.Conversion, mine.Labels)
	}

	// no bindings: the foreign configuration and conversion stay, ours goes
	if err := reg.Apply(ctx, Bindings{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vwc.Get(ctx, "foreign-hooks", metav1.GetOptions{}); err != nil {
		t.Errorf("the foreign configuration was deleted: %v", err)
	}
	if got, _ := crds.Get(ctx, "others.own.test", metav1.GetOptions{}); got.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		t.Errorf("another's conversion was reset")
	}
	if got, _ := crds.Get(ctx, "mine.own.test", metav1.GetOptions{}); got.Spec.Conversion.Strategy != apiextv1.NoneConverter || got.Labels[LabelConversion] != "" {
		t.Errorf("our conversion was not reset: %+v", got.Spec.Conversion)
	}

	// another instance's configuration of the same name is not ours either
	other := NewRegistrar(RegistrarOptions{Client: client, Ext: ext, Instance: "ns.two", ConfigurationName: "shared-hooks", Admission: ep, Logger: quiet})
	ours := NewRegistrar(RegistrarOptions{Client: client, Ext: ext, Instance: "ns.one", ConfigurationName: "shared-hooks", Admission: ep, Logger: quiet})
	if err := other.Apply(ctx, Bindings{Admission: []AdmissionEntry{admission}}); err != nil {
		t.Fatal(err)
	}
	if err := ours.Apply(ctx, Bindings{Admission: []AdmissionEntry{admission}}); err == nil {
		t.Fatal("one instance took another's configuration")
	}
	if err := ours.Apply(ctx, Bindings{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vwc.Get(ctx, "shared-hooks", metav1.GetOptions{}); err != nil {
		t.Fatalf("one instance deleted another's configuration: %v", err)
	}
}
