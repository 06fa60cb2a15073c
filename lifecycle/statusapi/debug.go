package statusapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// The debug endpoints answer what the original addon-operator's debug
// socket answers (modules, their values, config and rendered charts,
// global values and config, hooks) for the CLI's debug subcommands
// (docs/operator.md, "Debug commands"). They show values, which may hold
// secrets, and hooks' output, so they answer only clients on the
// operator's own host (LocalOnly): over loopback, or from the address the
// connection came in on. `kubectl exec` and `kubectl port-forward` are
// such clients; a Service's are not.

// DebugModule is one module in /debug/modules.
type DebugModule struct {
	Name      string               `json:"name"`
	Order     int                  `json:"order"`
	Enabled   bool                 `json:"enabled"`
	State     runstate.ModuleState `json:"state"`
	Path      string               `json:"path"`
	LastError string               `json:"lastError,omitempty"`
	// LastErrorOutput is the end of the failed hook's stderr, which
	// /status leaves out (docs/security.md, "Who sees what").
	LastErrorOutput string `json:"lastErrorOutput,omitempty"`
	// Health is its release's health (docs/operator.md, "Health").
	Health health.Status `json:"health,omitempty"`
	// DisabledReason and Readiness are as in /status (ModuleStatus).
	DisabledReason string              `json:"disabledReason,omitempty"`
	Readiness      *runstate.Readiness `json:"readiness,omitempty"`
}

// DebugHook is one hook in /debug/hooks.
type DebugHook struct {
	Name     string         `json:"name"`
	Module   string         `json:"module,omitempty"`
	Bindings []DebugBinding `json:"bindings"`
	// LastError and LastErrorOutput are the hook's last failed run, until
	// it runs without failing.
	LastError       string `json:"lastError,omitempty"`
	LastErrorOutput string `json:"lastErrorOutput,omitempty"`
}

// DebugBinding is one binding of a hook: an ordered one with its order, a
// schedule with its crontab, a kubernetes binding with its kind.
type DebugBinding struct {
	Binding string   `json:"binding"`
	Name    string   `json:"name,omitempty"`
	Order   *float64 `json:"order,omitempty"`
	Crontab string   `json:"crontab,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Queue   string   `json:"queue,omitempty"`
}

// orderedBindings are the bindings with an order, in lifecycle order.
var orderedBindings = []string{loader.OnStartup, loader.BeforeAll, loader.AfterAll, loader.BeforeHelm,
	loader.AfterHelm, loader.BeforeDeleteHelm, loader.AfterDeleteHelm}

// debugRoutes registers the debug endpoints on mux.
func (a *API) debugRoutes(mux *http.ServeMux) {
	mux.Handle("GET /debug/modules", debugJSON(func(*http.Request) (any, error) {
		mods, err := a.debugModules()
		return map[string]any{"modules": mods}, err
	}))
	mux.Handle("GET /debug/modules/{name}/values", debugJSON(func(r *http.Request) (any, error) {
		return a.debugModuleValues(r.PathValue("name"), r.URL.Query().Get("global") == "true", false)
	}))
	mux.Handle("GET /debug/modules/{name}/config", debugJSON(func(r *http.Request) (any, error) {
		return a.debugModuleValues(r.PathValue("name"), r.URL.Query().Get("global") == "true", true)
	}))
	mux.Handle("GET /debug/modules/{name}/render", LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		manifest, err := a.debugRender(r.Context(), r.PathValue("name"))
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte(manifest))
	})))
	mux.Handle("GET /debug/global/values", debugJSON(func(*http.Request) (any, error) {
		_, store, err := a.debugCurrent()
		if err != nil {
			return nil, err
		}
		v, err := store.GlobalValues()
		return a.opts.Redactor.Values(v), err
	}))
	mux.Handle("GET /debug/global/config", debugJSON(func(*http.Request) (any, error) {
		_, store, err := a.debugCurrent()
		if err != nil {
			return nil, err
		}
		return a.opts.Redactor.Values(store.GlobalConfigValues()), nil
	}))
	mux.Handle("GET /debug/hooks", debugJSON(func(*http.Request) (any, error) {
		hooks, err := a.debugHooks()
		return map[string]any{"hooks": hooks}, err
	}))
}

// debugJSON serves what fn returns as JSON, to local clients only.
func debugJSON(fn func(*http.Request) (any, error)) http.Handler {
	return LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, v)
	}))
}

// debugCurrent is the running model and store, or an error until the
// first tree is loaded.
func (a *API) debugCurrent() (*loader.Model, *values.Store, error) {
	t := a.opts.Tree.Load()
	if t == nil || t.Model == nil || t.Store == nil {
		return nil, nil, &httpError{code: http.StatusServiceUnavailable, msg: "starting: no modules loaded yet"}
	}
	return t.Model, t.Store, nil
}

// debugModule finds a module of the running tree by name, with the tree's
// model it was read from.
func (a *API) debugModule(name string) (*loader.Model, *loader.Module, *values.Store, error) {
	model, store, err := a.debugCurrent()
	if err != nil {
		return nil, nil, nil, err
	}
	m := model.Module(name)
	if m == nil {
		return nil, nil, nil, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("module %q not found (addon-operator module list shows the modules)", name)}
	}
	return model, m, store, nil
}

// debugModules lists the running tree's modules in run order, with their
// health.
func (a *API) debugModules() ([]DebugModule, error) {
	model, _, err := a.debugCurrent()
	if err != nil {
		return nil, err
	}
	states := a.opts.Modules.All()
	out := make([]DebugModule, 0, len(model.Modules))
	for _, m := range model.Modules {
		dm := DebugModule{Name: m.Name, Order: m.Order, State: runstate.StateDisabled, Path: m.Dir}
		if s, ok := states[m.Name]; ok {
			dm.Enabled, dm.State, dm.LastError, dm.LastErrorOutput = s.Enabled, s.State, s.LastError, s.LastOutput
			dm.DisabledReason, dm.Readiness = s.ShownReasons()
		}
		if h := a.moduleHealth(m.Name); h != nil {
			dm.Health = h.Status
		}
		out = append(out, dm)
	}
	return out, nil
}

// debugModuleValues is a module's values (what its hooks get as
// VALUES_PATH) or, with config, its ConfigMap section (CONFIG_VALUES_PATH),
// under the module's key; withGlobal adds the global section.
func (a *API) debugModuleValues(name string, withGlobal, config bool) (values.Values, error) {
	_, m, store, err := a.debugModule(name)
	if err != nil {
		return nil, err
	}
	var v values.Values
	if config {
		v = store.ModuleConfigValues(m.Key)
	} else if v, err = store.ModuleValues(m.Key, a.opts.Modules.EnabledList()); err != nil {
		return nil, err
	}
	if !withGlobal {
		delete(v, values.GlobalKey)
	}
	// shown, not handed to a hook: secret paths as <redacted>
	return a.opts.Redactor.Values(v), nil
}

// debugRender renders a module's chart with its current values, as the
// next Helm upgrade would, whether or not the module is enabled.
func (a *API) debugRender(ctx context.Context, name string) (string, error) {
	model, m, store, err := a.debugModule(name)
	if err != nil {
		return "", err
	}
	if !m.HasChart {
		return "", &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("module %q has no chart", name)}
	}
	vals, err := store.ModuleValues(m.Key, a.opts.Modules.EnabledList())
	if err != nil {
		return "", err
	}
	return kube.Render(ctx, kube.Release{Name: m.Name, Key: m.Key, ChartDir: m.Dir, Files: model.ChartFS(m), ChartHash: m.Hash, Exclude: m.BatchExecutables(), Values: vals}, a.opts.Namespace)
}

// debugHooks lists the running tree's hooks with their bindings: global
// hooks first, then each module's in run order.
func (a *API) debugHooks() ([]DebugHook, error) {
	model, _, err := a.debugCurrent()
	if err != nil {
		return nil, err
	}
	hooks := append([]*loader.Hook{}, model.Global.Hooks...)
	for _, m := range model.Modules {
		hooks = append(hooks, m.Hooks...)
	}
	out := make([]DebugHook, 0, len(hooks))
	for _, h := range hooks {
		dh := DebugHook{Name: h.Name, Module: h.Module, Bindings: []DebugBinding{}}
		if a.opts.Failures != nil {
			dh.LastError, dh.LastErrorOutput = a.opts.Failures.HookFailure(h.Name)
		}
		if c := h.Config; c != nil {
			for _, b := range orderedBindings {
				if order, ok := c.Order(b); ok {
					dh.Bindings = append(dh.Bindings, DebugBinding{Binding: b, Order: &order})
				}
			}
			for _, s := range c.Schedules {
				dh.Bindings = append(dh.Bindings, DebugBinding{Binding: loader.Schedule, Name: s.Name, Crontab: s.Crontab, Queue: s.Queue})
			}
			for _, k := range c.Kubernetes {
				dh.Bindings = append(dh.Bindings, DebugBinding{Binding: loader.Kubernetes, Name: k.Name, Kind: k.Kind, Queue: k.Queue})
			}
			if a.opts.Webhooks != nil {
				dh.Bindings = append(dh.Bindings, a.opts.Webhooks.DebugBindings(c)...)
			}
		}
		out = append(out, dh)
	}
	return out, nil
}
