package webhook

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegisteredKey names one registered webhook: "validating/NAME",
// "mutating/NAME" or "conversion/CRD", as its path does.
func RegisteredKey(kind Kind, name string) string { return string(kind) + "/" + name }

// Registered is what this instance has registered now, as RegisteredKey
// values: the webhooks of its configurations and the CRDs whose conversion
// it set. After a restart, before the modules' enabled states are known,
// it is what the last run left (docs/operator.md, "Validating and
// conversion webhooks").
func (r *Registrar) Registered(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	if r.o.Admission != nil {
		v, err := r.o.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, r.o.ConfigurationName, metav1.GetOptions{})
		if ignoreNotFound(err) != nil {
			return nil, fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", r.o.ConfigurationName, err)
		}
		if err == nil && r.owned(v) {
			for _, w := range v.Webhooks {
				out[RegisteredKey(Validating, w.Name)] = true
			}
		}
		m, err := r.o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, r.o.ConfigurationName, metav1.GetOptions{})
		if ignoreNotFound(err) != nil {
			return nil, fmt.Errorf("read MutatingWebhookConfiguration %s: %w", r.o.ConfigurationName, err)
		}
		if err == nil && r.owned(m) {
			for _, w := range m.Webhooks {
				out[RegisteredKey(Mutating, w.Name)] = true
			}
		}
	}
	if r.o.Conversion != nil {
		list, err := r.o.Ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{LabelSelector: LabelConversion + "=" + r.o.Instance})
		if err != nil {
			return nil, fmt.Errorf("list CRDs with a conversion webhook: %w", err)
		}
		for _, crd := range list.Items {
			out[RegisteredKey(Conversion, crd.Name)] = true
		}
	}
	return out, nil
}
