package loader

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
)

// Model is one loaded tree. It is immutable once Load returns it.
type Model struct {
	// ModulesDir is the modules directories as Load takes them: absolute,
	// separated by filepath.ListSeparator (one directory in the common case).
	ModulesDir string
	// ModulesDirs lists them one by one, in the order given.
	ModulesDirs    []string
	GlobalHooksDir string
	Global         *Global
	// Modules in run order, from every modules directory: by numeric
	// prefix, then name.
	Modules []*Module
	// Values is the tree's values source for values.NewStore.
	Values values.Source
	// Config is the cluster's config read from the tree (WithClusterConfig;
	// nil without it): part of the revision, so a rollback by ref rolls
	// it back (docs/operator.md, "Config in git").
	Config *clusterconfig.Config
	// Encrypted lists, per values key ("global", a module's key, a flag),
	// the paths below it whose values were SOPS-encrypted in the tree's
	// values.yaml files (WithSecrets): what to redact wherever values
	// show. The cluster's config has its own, Config.Encrypted.
	Encrypted map[string][]secretfile.Path
	// Placeholders: some encrypted value, of the values files or the
	// cluster's config, was read as secretfile.Placeholder (a preview
	// without a key), which a schema may refuse.
	Placeholders bool
	// Warnings are problems that do not stop the load.
	Warnings []string
	// root and alias: the tree's root and its alias, for ChartFS
	root, alias string
}

// Module returns the named module, or nil.
func (m *Model) Module(name string) *Module {
	for _, mod := range m.Modules {
		if mod.Name == name {
			return mod
		}
	}
	return nil
}

// Global is what the tree says about global hooks and global values.
type Global struct {
	Hooks   []*Hook
	Schemas *values.Schemas
	// Hash covers the global hooks directory and the values.yaml of every
	// modules directory.
	Hash string
}

// Module is one module directory.
type Module struct {
	Name    string // kebab-case, without the numeric prefix
	Key     string // camelCase values key
	Order   int
	Dir     string // absolute path
	DirName string // as on disk, 001-simple-module
	Hooks   []*Hook
	// EnabledScript is the path of the executable `enabled` file, or "".
	EnabledScript string
	Values        values.Values
	Schemas       *values.Schemas
	// HasChart: the module has Chart.yaml or templates/.
	HasChart bool
	// HasChartFile: Chart.yaml exists (otherwise one is made up from the name).
	HasChartFile bool
	// HealthWait: later weights wait until the module is Healthy (its
	// Chart.yaml annotation, healthwait.go).
	HealthWait HealthWait
	// Hash covers every file of the module.
	Hash string
	// SettingsCheck is the path of the batch executable that answers
	// `hook check` on the module's settings, or "" (docs/operator.md,
	// "Settings checks").
	SettingsCheck string
	// settingsCheckInTree is its path in the module, as the chart holds it.
	settingsCheckInTree string
}

// BatchExecutables are the module's batch hook executables, as paths
// relative to its directory (slash-separated). The directory is also the
// chart, and Helm would otherwise pack these binaries into the release
// Secret, which a real one overflows (docs/operator.md, "Batch hooks").
func (m *Module) BatchExecutables() []string {
	var out []string
	paths := make([]string, 0, len(m.Hooks)+1)
	for _, h := range m.Hooks {
		if len(h.Args) > 0 {
			paths = append(paths, h.file())
		}
	}
	// one that holds a settings check and no hook is a batch executable too
	if m.SettingsCheck != "" {
		paths = append(paths, cmp.Or(m.settingsCheckInTree, m.SettingsCheck))
	}
	for _, p := range paths {
		rel, err := filepath.Rel(m.Dir, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(out, rel) {
			out = append(out, rel)
		}
	}
	return out
}

// Hook is one executable found under a hooks directory.
type Hook struct {
	// Name is the path relative to the module's modules directory (module
	// hooks) or GLOBAL_HOOKS_DIR (global hooks): 001-module/hooks/a.sh.
	Name string
	// Path is what a run execs, absolute: the file in the tree, or, for
	// one reached through the tree root alias, its real file beneath the
	// tree's root (docs/operator.md, "Trees from git").
	Path   string
	Module string // module name, "" for a global hook
	// WorkingDir is WORKING_DIR for the hook: the global hooks directory,
	// or the module's hooks directory.
	WorkingDir string
	// Config is nil only from a Loader made WithHookConfigs(false).
	Config *HookConfig
	// Hash covers the hook's file and, once its --config ran, what that
	// printed: a hook whose file or config changed gets a new one.
	Hash string
	// Args are the arguments of a run: none for a hook of its own file;
	// `hook run ID` or `hook ready` for one of a batch executable's hooks,
	// which share its Path (docs/operator.md, "Batch hooks").
	Args []string
	// Env is added to a run's environment: MODULE_NAME for a batch hook.
	Env []string
	// inTree is the file's path in the tree, where the walk found it.
	inTree string
	// scope is the hash of what its --config may read: its module's
	// directory, or the global hooks directory.
	scope string
	// image: the file is an ELF or Mach-O executable, which is asked
	// `hook config` before --config.
	image bool
	// batch holds the hooks a batch executable listed, which replace it.
	batch []*Hook
	// isBatch: the file is a batch executable (its batch may be empty).
	isBatch bool
	// settingsCheck: the batch executable answers `hook check`.
	settingsCheck bool
}

// Key identifies a hook across trees: its module, its name in the tree and
// its Hash. A new checkout of the tree (a new directory) keeps the keys of
// its unchanged hooks, and a hook whose file or config changed gets a new
// one, so its bindings are made again.
func (h *Hook) Key() string {
	return h.Module + "\x00" + h.Name + "\x00" + h.Hash
}

// file is the hook's file as errors name it: where the walk found it in
// its module, even when it runs as another path (Path).
func (h *Hook) file() string { return cmp.Or(h.inTree, h.Path) }

// Redact tells r the model's decrypted values and their paths: the
// SOPS-encrypted values of its config in git and of its values files
// (docs/operator.md, "Secrets"), so that whatever shows the model's values
// or an error quoting one hides them. A nil r is a no-op.
func (m *Model) Redact(r *values.Redactor) {
	if m == nil || r == nil {
		return
	}
	if m.Placeholders {
		// read without a key: nothing was decrypted, and the placeholder
		// text is no secret; the paths still are
		if m.Config != nil {
			r.Add(values.SensitiveFromEncrypted(m.Config.Encrypted), nil)
		}
		r.Add(values.SensitiveFromEncrypted(m.Encrypted), nil)
		return
	}
	if m.Config != nil {
		r.Add(values.SensitiveFromEncrypted(m.Config.Encrypted), m.Config.Data)
	}
	if len(m.Encrypted) == 0 {
		return
	}
	docs := []values.Values{m.Values.Common}
	for _, ms := range m.Values.Modules {
		docs = append(docs, ms.Values)
	}
	r.AddValues(values.SensitiveFromEncrypted(m.Encrypted), docs...)
}
