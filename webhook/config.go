package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// Conversion is the kind of a conversion webhook (Kind's third value).
const Conversion Kind = "conversion"

// Labels and annotations of what the Registrar writes (docs/security.md,
// "Ownership").
const (
	// LabelConversion marks a CRD whose conversion this instance set; its
	// value is the instance ID. Only such a CRD's conversion is reset.
	LabelConversion = "addonops.io/conversion-webhook"
	// annotationSpec is a digest of what was written, so an unchanged
	// configuration is not written again.
	annotationSpec = "addonops.io/webhook-spec"
)

// Endpoint is how the API server reaches one webhook server: a Service in
// the operator's namespace (port 443), or a URL, and the CA that signed
// the server's certificate.
type Endpoint struct {
	Namespace, Service string
	// URL, if set, is the server's base URL (https://host:port) and wins
	// over the Service: for an operator outside the cluster.
	URL string
	// CAFile is the PEM CA bundle the API server verifies the server with
	// (empty: the API server's own roots).
	CAFile string
}

// clientConfig is the endpoint of one webhook path, as admissionregistration
// names it; conversion uses the same fields.
func (e *Endpoint) clientConfig(path string) (admissionv1.WebhookClientConfig, error) {
	var cc admissionv1.WebhookClientConfig
	if e.CAFile != "" {
		b, err := os.ReadFile(e.CAFile)
		if err != nil {
			return cc, fmt.Errorf("webhook CA: %w", err)
		}
		cc.CABundle = b
	}
	if e.URL != "" {
		u := strings.TrimSuffix(e.URL, "/") + path
		cc.URL = &u
		return cc, nil
	}
	cc.Service = &admissionv1.ServiceReference{Namespace: e.Namespace, Name: e.Service, Path: &path}
	return cc, nil
}

// AdmissionEntry is one admission binding of a running hook.
type AdmissionEntry struct {
	Hook    string
	Binding loader.AdmissionBinding
}

// ConversionEntry is one conversion binding of a running hook.
type ConversionEntry struct {
	Hook    string
	Binding loader.ConversionBinding
}

// Bindings are the webhook bindings of the running tree.
type Bindings struct {
	Admission  []AdmissionEntry
	Conversion []ConversionEntry
}

// RegistrarOptions configure a Registrar.
type RegistrarOptions struct {
	Client kubernetes.Interface
	Ext    apiextensions.Interface
	// Instance is the operator's instance ID (kube.InstanceID).
	Instance string
	// ConfigurationName names the ValidatingWebhookConfiguration and the
	// MutatingWebhookConfiguration.
	ConfigurationName string
	// Admission and Conversion are the servers' endpoints; nil: that
	// server is not configured (no certificate).
	Admission, Conversion *Endpoint
	Logger                *slog.Logger
}

// Registrar writes the configuration objects that point the API server at
// the webhooks of the running tree.
type Registrar struct{ o RegistrarOptions }

// NewRegistrar makes a Registrar.
func NewRegistrar(o RegistrarOptions) *Registrar {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Registrar{o: o}
}

// Serves says whether the server of that kind is configured.
func (r *Registrar) Serves(kind Kind) bool {
	if kind == Conversion {
		return r.o.Conversion != nil
	}
	return r.o.Admission != nil
}

// Apply makes the configuration objects what b asks for: one webhook per
// admission binding (the configurations deleted when none is left), and
// each bound CRD's conversion pointed here (and reset on the CRDs this
// instance set before and no hook binds now). Each error names the hook.
func (r *Registrar) Apply(ctx context.Context, b Bindings) error {
	var errs []error
	var validating []admissionv1.ValidatingWebhook
	var mutating []admissionv1.MutatingWebhook
	for _, e := range b.Admission {
		if r.o.Admission == nil {
			continue
		}
		kind := Validating
		if e.Binding.Mutating {
			kind = Mutating
		}
		cc, err := r.o.Admission.clientConfig("/" + string(kind) + "/" + e.Binding.Name)
		if err != nil {
			return err
		}
		if kind == Mutating {
			mutating = append(mutating, mutatingWebhook(e.Binding, cc))
		} else {
			validating = append(validating, validatingWebhook(e.Binding, cc))
		}
	}
	if r.o.Admission != nil {
		errs = append(errs, r.applyValidating(ctx, validating), r.applyMutating(ctx, mutating))
	}
	if r.o.Conversion != nil {
		errs = append(errs, r.applyConversions(ctx, b.Conversion))
	}
	return errors.Join(errs...)
}

func validatingWebhook(b loader.AdmissionBinding, cc admissionv1.WebhookClientConfig) admissionv1.ValidatingWebhook {
	equivalent := admissionv1.Equivalent
	return admissionv1.ValidatingWebhook{
		Name: b.Name, ClientConfig: cc, Rules: b.Rules, FailurePolicy: ptr(b.FailurePolicy), MatchPolicy: &equivalent,
		NamespaceSelector: b.NamespaceSelector, ObjectSelector: b.LabelSelector, SideEffects: ptr(b.SideEffects),
		TimeoutSeconds: ptr(b.TimeoutSeconds), AdmissionReviewVersions: []string{"v1"}, MatchConditions: b.MatchConditions,
	}
}

func mutatingWebhook(b loader.AdmissionBinding, cc admissionv1.WebhookClientConfig) admissionv1.MutatingWebhook {
	equivalent := admissionv1.Equivalent
	return admissionv1.MutatingWebhook{
		Name: b.Name, ClientConfig: cc, Rules: b.Rules, FailurePolicy: ptr(b.FailurePolicy), MatchPolicy: &equivalent,
		NamespaceSelector: b.NamespaceSelector, ObjectSelector: b.LabelSelector, SideEffects: ptr(b.SideEffects),
		TimeoutSeconds: ptr(b.TimeoutSeconds), AdmissionReviewVersions: []string{"v1"}, MatchConditions: b.MatchConditions,
	}
}

func ptr[T any](v T) *T { return &v }

func digest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// owned: labelled with this instance.
func (r *Registrar) owned(m metav1.Object) bool {
	l := m.GetLabels()
	return l[kube.LabelManagedBy] == kube.ManagedByValue && l[kube.LabelInstance] == r.o.Instance
}

func (r *Registrar) ownLabels() map[string]string {
	return map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelInstance: r.o.Instance}
}

func (r *Registrar) notOurs(kind, name string) error {
	return fmt.Errorf("%s %s exists and is not this operator's (no %s=%s label): left as it is, and the webhooks are not registered; choose another VALIDATING_WEBHOOK_CONFIGURATION_NAME",
		kind, name, kube.LabelInstance, r.o.Instance)
}

func (r *Registrar) applyValidating(ctx context.Context, hooks []admissionv1.ValidatingWebhook) error {
	api := r.o.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	return applyConfiguration(ctx, r, "ValidatingWebhookConfiguration", len(hooks), digest(hooks), configAPI[*admissionv1.ValidatingWebhookConfiguration]{
		get: func(ctx context.Context, name string) (*admissionv1.ValidatingWebhookConfiguration, error) {
			return api.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *admissionv1.ValidatingWebhookConfiguration) error {
			_, err := api.Create(ctx, o, metav1.CreateOptions{FieldManager: kube.FieldManagerWebhooks})
			return err
		},
		update: func(ctx context.Context, o *admissionv1.ValidatingWebhookConfiguration) error {
			_, err := api.Update(ctx, o, metav1.UpdateOptions{FieldManager: kube.FieldManagerWebhooks})
			return err
		},
		delete: func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
			return api.Delete(ctx, name, opts)
		},
		fresh: func() *admissionv1.ValidatingWebhookConfiguration {
			return &admissionv1.ValidatingWebhookConfiguration{}
		},
		set: func(o *admissionv1.ValidatingWebhookConfiguration) { o.Webhooks = hooks },
	})
}

func (r *Registrar) applyMutating(ctx context.Context, hooks []admissionv1.MutatingWebhook) error {
	api := r.o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return applyConfiguration(ctx, r, "MutatingWebhookConfiguration", len(hooks), digest(hooks), configAPI[*admissionv1.MutatingWebhookConfiguration]{
		get: func(ctx context.Context, name string) (*admissionv1.MutatingWebhookConfiguration, error) {
			return api.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *admissionv1.MutatingWebhookConfiguration) error {
			_, err := api.Create(ctx, o, metav1.CreateOptions{FieldManager: kube.FieldManagerWebhooks})
			return err
		},
		update: func(ctx context.Context, o *admissionv1.MutatingWebhookConfiguration) error {
			_, err := api.Update(ctx, o, metav1.UpdateOptions{FieldManager: kube.FieldManagerWebhooks})
			return err
		},
		delete: func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
			return api.Delete(ctx, name, opts)
		},
		fresh: func() *admissionv1.MutatingWebhookConfiguration { return &admissionv1.MutatingWebhookConfiguration{} },
		set:   func(o *admissionv1.MutatingWebhookConfiguration) { o.Webhooks = hooks },
	})
}

// configAPI is what applyConfiguration needs of one kind of webhook
// configuration: the client's calls, a new object, and putting the
// desired webhooks on one.
type configAPI[O metav1.Object] struct {
	get    func(ctx context.Context, name string) (O, error)
	create func(ctx context.Context, o O) error
	update func(ctx context.Context, o O) error
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	fresh  func() O
	set    func(o O)
}

// applyConfiguration makes the configuration ConfigurationName hold the
// desired webhooks (n of them, digest spec): created, updated when its
// recorded digest differs, deleted when n is 0; one without our labels is
// never touched.
func applyConfiguration[O metav1.Object](ctx context.Context, r *Registrar, kind string, n int, spec string, api configAPI[O]) error {
	name := r.o.ConfigurationName
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := api.get(ctx, name)
		switch {
		case apierrors.IsNotFound(err) && n == 0:
			return nil
		case apierrors.IsNotFound(err):
			obj := api.fresh()
			api.set(obj)
			obj.SetName(name)
			obj.SetLabels(r.ownLabels())
			obj.SetAnnotations(map[string]string{annotationSpec: spec})
			err = api.create(ctx, obj)
			r.logWrite(err, kind+" created", name, n)
			return err
		case err != nil:
			return err
		case !r.owned(have):
			if n == 0 {
				return nil
			}
			return r.notOurs(kind, name)
		case n == 0:
			uid := have.GetUID()
			err = api.delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			r.logWrite(err, kind+" deleted: no hook binds a webhook", name, 0)
			return ignoreNotFound(err)
		case have.GetAnnotations()[annotationSpec] == spec:
			return nil
		}
		api.set(have)
		have.SetAnnotations(withKey(have.GetAnnotations(), annotationSpec, spec))
		err = api.update(ctx, have)
		r.logWrite(err, kind+" updated", name, n)
		return err
	})
}

func (r *Registrar) logWrite(err error, msg, name string, webhooks int) {
	if err == nil {
		r.o.Logger.Info(msg, "name", name, "webhooks", webhooks)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[k] = v
	return out
}

// applyConversions points each bound CRD's conversion here and resets the
// conversion of CRDs this instance set that no hook binds any more.
func (r *Registrar) applyConversions(ctx context.Context, entries []ConversionEntry) error {
	hooks := map[string][]string{} // CRD → hooks that bind it
	for _, e := range entries {
		if !slices.Contains(hooks[e.Binding.CRDName], e.Hook) {
			hooks[e.Binding.CRDName] = append(hooks[e.Binding.CRDName], e.Hook)
		}
	}
	var errs []error
	for _, crd := range slices.Sorted(maps.Keys(hooks)) {
		if err := r.setConversion(ctx, crd); err != nil {
			errs = append(errs, fmt.Errorf("hook %s: conversion of CRD %s: %w", strings.Join(hooks[crd], ", "), crd, err))
		}
	}
	api := r.o.Ext.ApiextensionsV1().CustomResourceDefinitions()
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: LabelConversion + "=" + r.o.Instance})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list CRDs with a conversion webhook: %w", err))...)
	}
	for _, crd := range list.Items {
		if _, ok := hooks[crd.Name]; ok {
			continue
		}
		if err := r.resetConversion(ctx, crd.Name); err != nil {
			errs = append(errs, fmt.Errorf("reset the conversion of CRD %s: %w", crd.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Registrar) setConversion(ctx context.Context, name string) error {
	cc, err := r.o.Conversion.clientConfig(pathConversion + name)
	if err != nil {
		return err
	}
	want := &apiextv1.CustomResourceConversion{
		Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{
			ClientConfig:             &apiextv1.WebhookClientConfig{URL: cc.URL, CABundle: cc.CABundle},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	if cc.Service != nil {
		want.Webhook.ClientConfig.Service = &apiextv1.ServiceReference{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Path: cc.Service.Path}
	}
	spec := digest(want)
	api := r.o.Ext.ApiextensionsV1().CustomResourceDefinitions()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return errors.New("the CRD does not exist (yet)")
		}
		if err != nil {
			return err
		}
		ours := have.Labels[LabelConversion] == r.o.Instance
		if !ours && have.Spec.Conversion != nil && have.Spec.Conversion.Strategy == apiextv1.WebhookConverter {
			return fmt.Errorf("it has a conversion webhook this operator did not set (no %s=%s label): left as it is", LabelConversion, r.o.Instance)
		}
		if ours && have.Annotations[annotationSpec] == spec && have.Spec.Conversion != nil && have.Spec.Conversion.Strategy == apiextv1.WebhookConverter {
			return nil
		}
		have.Spec.Conversion = want
		have.Labels = withKey(have.Labels, LabelConversion, r.o.Instance)
		have.Annotations = withKey(have.Annotations, annotationSpec, spec)
		_, err = api.Update(ctx, have, metav1.UpdateOptions{FieldManager: kube.FieldManagerWebhooks})
		if err == nil {
			r.o.Logger.Info("CRD conversion webhook set", "crd", name)
		}
		return err
	})
}

func (r *Registrar) resetConversion(ctx context.Context, name string) error {
	api := r.o.Ext.ApiextensionsV1().CustomResourceDefinitions()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ignoreNotFound(err)
		}
		if have.Labels[LabelConversion] != r.o.Instance {
			return nil
		}
		have.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
		delete(have.Labels, LabelConversion)
		delete(have.Annotations, annotationSpec)
		_, err = api.Update(ctx, have, metav1.UpdateOptions{FieldManager: kube.FieldManagerWebhooks})
		if err == nil {
			r.o.Logger.Info("CRD conversion webhook reset: no hook binds it", "crd", name)
		}
		return err
	})
}
