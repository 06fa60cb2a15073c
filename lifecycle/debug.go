package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// The debug endpoints answer what the original addon-operator's debug
// socket answers (modules, their values, config and rendered charts,
// global values and config, hooks) for the CLI's debug subcommands
// (docs/operator.md, "Debug commands"). They show values, which may hold
// secrets, so they answer only clients on the operator's own host: over
// loopback, or from the address the connection came in on. `kubectl exec`
// and `kubectl port-forward` are such clients; a Service's are not.

// DebugModule is one module in /debug/modules.
type DebugModule struct {
	Name      string      `json:"name"`
	Order     int         `json:"order"`
	Enabled   bool        `json:"enabled"`
	State     ModuleState `json:"state"`
	Path      string      `json:"path"`
	LastError string      `json:"lastError,omitempty"`
	// LastErrorOutput is the end of the failed hook's stderr, which
	// /status leaves out (docs/security.md, "Who sees what").
	LastErrorOutput string `json:"lastErrorOutput,omitempty"`
	// Health is its release's health (docs/operator.md, "Health").
	Health health.Status `json:"health,omitempty"`
	// DisabledReason and Readiness are as in /status (ModuleStatus).
	DisabledReason string     `json:"disabledReason,omitempty"`
	Readiness      *Readiness `json:"readiness,omitempty"`
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

// debugAPI serves the debug endpoints from the running state.
type debugAPI struct {
	trees    *runstate.Trees
	modules  *runstate.Modules
	failures *hookrun.Failures
	health   HealthTracker // nil: none
}

// debugError is a debug request that cannot be answered, with its status.
type debugError struct {
	code int
	msg  string
}

func (e *debugError) Error() string { return e.msg }

// debugRoutes registers the debug endpoints on mux; namespace is what
// charts are rendered for.
func (d *debugAPI) debugRoutes(mux *http.ServeMux, namespace string) {
	mux.Handle("GET /debug/modules", debugJSON(func(*http.Request) (any, error) {
		mods, err := d.debugModules()
		withHealth(d.health, mods)
		return map[string]any{"modules": mods}, err
	}))
	mux.Handle("GET /debug/modules/{name}/values", debugJSON(func(r *http.Request) (any, error) {
		return d.debugModuleValues(r.PathValue("name"), r.URL.Query().Get("global") == "true", false)
	}))
	mux.Handle("GET /debug/modules/{name}/config", debugJSON(func(r *http.Request) (any, error) {
		return d.debugModuleValues(r.PathValue("name"), r.URL.Query().Get("global") == "true", true)
	}))
	mux.Handle("GET /debug/modules/{name}/render", LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		manifest, err := d.debugRender(r.Context(), r.PathValue("name"), namespace)
		if err != nil {
			writeDebugError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte(manifest))
	})))
	mux.Handle("GET /debug/global/values", debugJSON(func(*http.Request) (any, error) {
		_, store, err := d.debugCurrent()
		if err != nil {
			return nil, err
		}
		return store.GlobalValues()
	}))
	mux.Handle("GET /debug/global/config", debugJSON(func(*http.Request) (any, error) {
		_, store, err := d.debugCurrent()
		if err != nil {
			return nil, err
		}
		return store.GlobalConfigValues(), nil
	}))
	mux.Handle("GET /debug/hooks", debugJSON(func(*http.Request) (any, error) {
		hooks, err := d.debugHooks()
		return map[string]any{"hooks": hooks}, err
	}))
}

// debugJSON serves what fn returns as JSON, to local clients only.
func debugJSON(fn func(*http.Request) (any, error)) http.Handler {
	return LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		if err != nil {
			writeDebugError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	}))
}

func writeDebugError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if de, ok := err.(*debugError); ok {
		code = de.code
	}
	http.Error(w, err.Error(), code)
}

// LocalOnly answers clients on the operator's own host and refuses others
// (the debug endpoints, and pprof when it is on).
func LocalOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fromOwnHost(r) {
			http.Error(w, "the debug endpoints answer only on the operator's own host: run the command in its pod (kubectl exec) or through kubectl port-forward", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fromOwnHost: the connection came in on loopback from loopback, or from
// the address it came in on (a pod talking to its own IP), and the request
// names its host by an IP or "localhost". A proxy in the pod that delivers
// others' requests from a loopback address to the pod's IP (a service
// mesh's sidecar) fails the first test; a web page whose name was rebound
// to 127.0.0.1 fails the last.
func fromOwnHost(r *http.Request) bool {
	remote := hostIP(r.RemoteAddr)
	localAddr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if remote == nil || !ok || !ipOrLocalhost(r.Host) {
		return false
	}
	local := hostIP(localAddr.String())
	if remote.IsLoopback() {
		return local != nil && local.IsLoopback()
	}
	return remote.Equal(local)
}

// ipOrLocalhost: a Host header that names an IP address or localhost.
func ipOrLocalhost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return host == "localhost" || net.ParseIP(host) != nil
}

func hostIP(addr string) net.IP {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	return net.ParseIP(host)
}

// debugCurrent is the running model and store, or an error until the
// first tree is loaded.
func (d *debugAPI) debugCurrent() (*loader.Model, *values.Store, error) {
	model, store := d.trees.Current()
	if model == nil || store == nil {
		return nil, nil, &debugError{code: http.StatusServiceUnavailable, msg: "starting: no modules loaded yet"}
	}
	return model, store, nil
}

// debugModule finds a module of the running tree by name, with the tree's
// model it was read from.
func (d *debugAPI) debugModule(name string) (*loader.Model, *loader.Module, *values.Store, error) {
	model, store, err := d.debugCurrent()
	if err != nil {
		return nil, nil, nil, err
	}
	m := model.Module(name)
	if m == nil {
		return nil, nil, nil, &debugError{code: http.StatusNotFound, msg: fmt.Sprintf("module %q not found (addon-operator module list shows the modules)", name)}
	}
	return model, m, store, nil
}

// debugModules lists the running tree's modules in run order.
func (d *debugAPI) debugModules() ([]DebugModule, error) {
	model, _, err := d.debugCurrent()
	if err != nil {
		return nil, err
	}
	states := d.modules.All()
	out := make([]DebugModule, 0, len(model.Modules))
	for _, m := range model.Modules {
		dm := DebugModule{Name: m.Name, Order: m.Order, State: StateDisabled, Path: m.Dir}
		if s, ok := states[m.Name]; ok {
			dm.Enabled, dm.State, dm.LastError, dm.LastErrorOutput = s.Enabled, s.State, s.LastError, s.LastOutput
			dm.DisabledReason, dm.Readiness = s.ShownReasons()
		}
		out = append(out, dm)
	}
	return out, nil
}

// debugModuleValues is a module's values (what its hooks get as
// VALUES_PATH) or, with config, its ConfigMap section (CONFIG_VALUES_PATH),
// under the module's key; withGlobal adds the global section.
func (d *debugAPI) debugModuleValues(name string, withGlobal, config bool) (values.Values, error) {
	_, m, store, err := d.debugModule(name)
	if err != nil {
		return nil, err
	}
	var v values.Values
	if config {
		v = store.ModuleConfigValues(m.Key)
	} else if v, err = store.ModuleValues(m.Key, d.modules.EnabledList()); err != nil {
		return nil, err
	}
	if !withGlobal {
		delete(v, values.GlobalKey)
	}
	return v, nil
}

// debugRender renders a module's chart with its current values, as the
// next Helm upgrade would, whether or not the module is enabled.
func (d *debugAPI) debugRender(ctx context.Context, name, namespace string) (string, error) {
	model, m, store, err := d.debugModule(name)
	if err != nil {
		return "", err
	}
	if !m.HasChart {
		return "", &debugError{code: http.StatusNotFound, msg: fmt.Sprintf("module %q has no chart", name)}
	}
	vals, err := store.ModuleValues(m.Key, d.modules.EnabledList())
	if err != nil {
		return "", err
	}
	return kube.Render(ctx, kube.Release{Name: m.Name, Key: m.Key, ChartDir: m.Dir, Files: model.ChartFS(m), ChartHash: m.Hash, Exclude: m.BatchExecutables(), Values: vals}, namespace)
}

// debugHooks lists the running tree's hooks with their bindings: global
// hooks first, then each module's in run order.
func (d *debugAPI) debugHooks() ([]DebugHook, error) {
	model, _, err := d.debugCurrent()
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
		f := d.failures.Get(h.Name)
		dh.LastError, dh.LastErrorOutput = f.Err, f.Output
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
			dh.Bindings = append(dh.Bindings, webhookDebugBindings(c)...)
		}
		out = append(out, dh)
	}
	return out, nil
}
