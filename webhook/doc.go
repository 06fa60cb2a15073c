// Package webhook owns the operator's admission and conversion webhooks
// as the API server sees them (docs/operator.md, "Validating and
// conversion webhooks"): the HTTPS server (certificates reloaded from their
// files, an optional client CA), the decoding of AdmissionReview
// (admission.k8s.io/v1) and ConversionReview (apiextensions.k8s.io/v1)
// requests with bounded bodies, per-webhook concurrency and a budget of
// bytes in flight taken before a body is read, routing by path to what the
// operator routes (any other path refused unread, docs/security.md, "The
// webhook port"), what is registered now, and the configuration objects that point
// the API server here: a ValidatingWebhookConfiguration (and a
// MutatingWebhookConfiguration) with one webhook per binding, and the
// conversion of the CRDs conversion hooks name.
//
// It runs no hook: the Reviewer it is given (the lifecycle) does. It never
// changes a configuration or a CRD conversion another owner set
// (docs/security.md, "Ownership").
package webhook
