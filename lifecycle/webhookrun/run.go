package webhookrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// Binding context types of webhook runs, as shell-operator writes them.
const (
	typeValidating = "Validating"
	typeMutating   = "Mutating"
	typeConversion = "Conversion"
)

// Routes says whether the running tree binds the webhook (a conversion of
// the CRD): the server refuses any other path unread.
func (w *Webhooks) Routes(kind webhook.Kind, name string) bool {
	t := w.current()
	if kind == webhook.Conversion {
		return slices.ContainsFunc(t.conversion, func(e webhook.ConversionEntry) bool { return e.Binding.CRDName == name })
	}
	_, ok := t.admission[webhook.RegisteredKey(kind, name)]
	return ok
}

// Admit runs the hook bound to an admission webhook with the review in its
// binding context and reads its answer from $VALIDATING_RESPONSE_PATH.
func (w *Webhooks) Admit(ctx context.Context, kind webhook.Kind, name string, review *admissionv1.AdmissionReview) (webhook.AdmissionResult, error) {
	route, ok := w.current().admission[webhook.RegisteredKey(kind, name)]
	if !ok {
		return webhook.AdmissionResult{}, fmt.Errorf("no hook of the running tree binds the %s webhook %s", kind, name)
	}
	if why := w.waitingFor(route.hook); why != "" {
		return w.byFailurePolicy(route, name, why), nil
	}
	typ := typeValidating
	if kind == webhook.Mutating {
		typ = typeMutating
	}
	bc := map[string]any{"binding": name, "type": typ, "review": review}
	w.addSnapshots(bc, route.hook, route.binding.Group, route.binding.IncludeSnapshotsFrom)
	out, err := w.runHook(ctx, route.hook, name, bc)
	if err != nil {
		return webhook.AdmissionResult{}, err
	}
	res, perr := webhook.ParseAdmissionResponse(out)
	if perr != nil {
		w.logger.Warn("webhook hook's response refused: the request is denied", "hook", route.hook.Name, "module", route.hook.Module, "binding", name, "error", perr)
	}
	return res, nil
}

// Convert converts the review's objects to its desiredAPIVersion along the
// bound conversions of the CRD, running one hook per step; objects of each
// apiVersion go their own way and come back in the request's order.
func (w *Webhooks) Convert(ctx context.Context, crd string, review *apiextv1.ConversionReview) ([]runtime.RawExtension, error) {
	t := w.current()
	req := review.Request
	out := slices.Clone(req.Objects)
	byVersion := map[string][]int{}
	var versions []string
	for i, o := range req.Objects {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(o.Raw, &tm); err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if tm.APIVersion == req.DesiredAPIVersion {
			continue
		}
		if _, ok := byVersion[tm.APIVersion]; !ok {
			versions = append(versions, tm.APIVersion)
		}
		byVersion[tm.APIVersion] = append(byVersion[tm.APIVersion], i)
	}
	for _, from := range versions {
		path := webhook.ConversionPath(crd, t.conversion, from, req.DesiredAPIVersion)
		if path == nil {
			return nil, fmt.Errorf("no hook converts %s from %s to %s", crd, from, req.DesiredAPIVersion)
		}
		objs := make([]runtime.RawExtension, 0, len(byVersion[from]))
		for _, i := range byVersion[from] {
			objs = append(objs, req.Objects[i])
		}
		for _, step := range path {
			h := t.hooks[step.Hook]
			if why := w.waitingFor(h); why != "" {
				// no failurePolicy for a conversion: it fails, saying why
				return nil, fmt.Errorf("hook %s converts %s from %s: not run, %s", h.Name, crd, step.From, why)
			}
			step := step
			sub := apiextv1.ConversionReview{TypeMeta: review.TypeMeta, Request: &apiextv1.ConversionRequest{UID: req.UID, DesiredAPIVersion: req.DesiredAPIVersion, Objects: objs}}
			bc := map[string]any{"binding": step.Binding, "type": typeConversion, "fromVersion": step.Rule.FromVersion, "toVersion": step.Rule.ToVersion, "review": sub}
			if b := conversionBinding(h, step.Binding); b != nil {
				w.addSnapshots(bc, h, b.Group, b.IncludeSnapshotsFrom)
			}
			raw, err := w.runHook(ctx, h, step.Binding, bc)
			if err != nil {
				return nil, fmt.Errorf("hook %s failed to convert %s to %s: %w", h.Name, crd, step.To, err)
			}
			converted, err := webhook.ParseConversionResponse(raw)
			if err != nil {
				return nil, fmt.Errorf("hook %s: %w", h.Name, err)
			}
			if len(converted) != len(objs) {
				return nil, fmt.Errorf("hook %s returned %d objects for %d", h.Name, len(converted), len(objs))
			}
			for i, o := range converted {
				var tm metav1.TypeMeta
				if err := json.Unmarshal(o.Raw, &tm); err != nil || tm.APIVersion != step.To {
					return nil, fmt.Errorf("hook %s: converted object %d has apiVersion %q, want %s", h.Name, i, tm.APIVersion, step.To)
				}
			}
			objs = converted
		}
		for j, i := range byVersion[from] {
			out[i] = objs[j]
		}
	}
	return out, nil
}

// byFailurePolicy answers a request for a webhook whose module does not
// run its hook (not yet known, or disabled) at once, as its failurePolicy
// says: Fail denies saying why, Ignore allows with a warning. Running the
// hook of a module that may be disabled could answer with values it does
// not have, and waiting would hold the API server for the whole timeout.
func (w *Webhooks) byFailurePolicy(route admissionRoute, name, why string) webhook.AdmissionResult {
	msg := fmt.Sprintf("webhook %s of hook %s not checked: %s", name, route.hook.Name, why)
	w.logger.Info("webhook request answered by its failurePolicy", "hook", route.hook.Name, "module", route.hook.Module, "binding", name,
		"failure_policy", string(route.binding.FailurePolicy), "reason", why)
	if route.binding.FailurePolicy == admissionregv1.Ignore {
		return webhook.AdmissionResult{Allowed: true, Warnings: []string{msg + "; allowed by failurePolicy Ignore"}}
	}
	return webhook.AdmissionResult{Message: msg + "; denied by failurePolicy Fail"}
}

func conversionBinding(h *loader.Hook, name string) *loader.ConversionBinding {
	for i := range h.Config.Conversion {
		if h.Config.Conversion[i].Name == name {
			return &h.Config.Conversion[i]
		}
	}
	return nil
}

// addSnapshots adds the snapshots of the group's kubernetes bindings and
// of includeSnapshotsFrom, when the binding asks for any.
func (w *Webhooks) addSnapshots(bc map[string]any, h *loader.Hook, group string, include []string) {
	names := slices.Clone(include)
	if group != "" {
		for _, k := range h.Config.Kubernetes {
			if k.Group == group && !slices.Contains(names, k.Name) {
				names = append(names, k.Name)
			}
		}
	}
	if len(names) == 0 && group == "" {
		return
	}
	if w.opts.Snapshots == nil {
		snaps := make(map[string]any, len(names))
		for _, n := range names {
			snaps[n] = []map[string]any{}
		}
		bc["snapshots"] = snaps
		return
	}
	bc["snapshots"] = w.opts.Snapshots.Snapshots(h, names)
}

// runHook runs a hook for one webhook request through the hook runner
// and returns what it wrote to its response file.
func (w *Webhooks) runHook(ctx context.Context, h *loader.Hook, binding string, bc map[string]any) ([]byte, error) {
	typ, _ := bc["type"].(string)
	what, limit := "VALIDATING_RESPONSE_PATH", int64(executor.MaxResultFile)
	if typ == typeConversion {
		// converted objects are as large as the request's: a list's worth
		what, limit = "CONVERSION_RESPONSE_PATH", webhook.DefaultMaxRequestBytes
	}
	return w.opts.Runner.RunWebhookHook(ctx, HookRun{Hook: h, Binding: binding, Type: typ, Context: bc, ResponseVar: what, ResponseLimit: limit})
}
