package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
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
func (w *webhooks) Routes(kind webhook.Kind, name string) bool {
	t := w.current()
	if kind == webhook.Conversion {
		return slices.ContainsFunc(t.conversion, func(e webhook.ConversionEntry) bool { return e.Binding.CRDName == name })
	}
	_, ok := t.admission[webhook.RegisteredKey(kind, name)]
	return ok
}

// Admit runs the hook bound to an admission webhook with the review in its
// binding context and reads its answer from $VALIDATING_RESPONSE_PATH.
func (w *webhooks) Admit(ctx context.Context, kind webhook.Kind, name string, review *admissionv1.AdmissionReview) (webhook.AdmissionResult, error) {
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
	out, err := w.runWebhookHook(ctx, route.hook, name, bc)
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
func (w *webhooks) Convert(ctx context.Context, crd string, review *apiextv1.ConversionReview) ([]runtime.RawExtension, error) {
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
			raw, err := w.runWebhookHook(ctx, h, step.Binding, bc)
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
func (w *webhooks) byFailurePolicy(route admissionRoute, name, why string) webhook.AdmissionResult {
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
func (w *webhooks) addSnapshots(bc map[string]any, h *loader.Hook, group string, include []string) {
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
	bc["snapshots"] = (&snapshotter{hm: w.bind.runningMonitors(h)}).from(names)
}

// runWebhookHook runs a hook for one webhook request, bounded by the
// request's context (the webhook's timeout) and the hook timeout, and
// returns what it wrote to its response file. Values and config patches,
// metrics and object patches it writes are not applied: a webhook run
// answers the API server and changes nothing else.
func (w *webhooks) runWebhookHook(ctx context.Context, h *loader.Hook, binding string, bc map[string]any) (_ []byte, err error) {
	r := w.run
	model, store := w.trees.Current()
	moduleKey, err := hookrun.ModuleKeyOf(model, h)
	if err != nil {
		return nil, err
	}
	logger := r.HookLogger(h, "binding", binding, "queue", "webhook")
	start := w.cfg.Now()
	var usage executor.Usage
	defer func() {
		run := metrics.HookRun{Module: h.Module, Hook: metrics.HookLabel(h), BindingType: bc["type"].(string), Activation: "Webhook", Queue: "webhook", OldName: h.Name}
		w.metrics.HookRan(run, binding, w.cfg.Now().Sub(start), &usage, err, false)
	}()
	files, err := r.PrepareRun(store, moduleKey, []map[string]any{bc}, "response.json")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(files.Dir)
	response := filepath.Join(files.Dir, "response.json")
	timeout := w.cfg.HookTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	_, err = executor.Run(ctx, executor.Command{
		Path: h.Path,
		// a batch executable's hook runs as `hook run ID`, as in runHook
		Args: h.Args,
		Dir:  filepath.Dir(h.Path),
		Env: files.Env(h,
			// shell-operator's names: one file for validating and mutating
			"VALIDATING_RESPONSE_PATH="+response,
			"ADMISSION_RESPONSE_PATH="+response,
			"CONVERSION_RESPONSE_PATH="+response,
		),
		Timeout: timeout,
		Logger:  logger,
		Usage:   &usage,
	})
	if err != nil {
		// one line, without what the hook printed: the API server hands
		// the message to the client (docs/security.md, "Who sees what")
		return nil, r.Failures().Failed(h.Name, binding, err)
	}
	what, limit := "VALIDATING_RESPONSE_PATH", int64(executor.MaxResultFile)
	if bc["type"] == typeConversion {
		// converted objects are as large as the request's: a list's worth
		what, limit = "CONVERSION_RESPONSE_PATH", webhook.DefaultMaxRequestBytes
	}
	b, err := executor.ReadResultFile(response, limit)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %s: %w", h.Name, what, err)
	}
	r.Failures().Succeeded(h.Name)
	return b, nil
}
