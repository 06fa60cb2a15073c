package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/values"
)

// Model is one loaded tree. It is immutable once Load returns it.
type Model struct {
	ModulesDir     string
	GlobalHooksDir string
	Global         *Global
	// Modules in run order: by numeric prefix, then name.
	Modules []*Module
	// Values is the tree's values source for values.NewStore.
	Values values.Source
	// Warnings are problems that do not stop the load.
	Warnings []string
}

// Global is what the tree says about global hooks and global values.
type Global struct {
	Hooks   []*Hook
	Schemas *values.Schemas
	// Hash covers the global hooks directory and $MODULES_DIR/values.yaml.
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
	// Hash covers every file of the module.
	Hash string
}

// Hook is one executable found under a hooks directory.
type Hook struct {
	// Name is the path relative to MODULES_DIR (module hooks) or
	// GLOBAL_HOOKS_DIR (global hooks): 001-module/hooks/a.sh.
	Name   string
	Path   string // absolute
	Module string // module name, "" for a global hook
	// WorkingDir is WORKING_DIR for the hook: the global hooks directory,
	// or the module's hooks directory.
	WorkingDir string
	// Config is nil only from a Loader made WithHookConfigs(false).
	Config *HookConfig
	Hash   string
}

// Loader loads trees. It caches hook configurations by the hook file's
// content, so a reload does not run unchanged hooks with --config again.
type Loader struct {
	configTimeout time.Duration
	parallel      int
	maxFile       int64
	maxConfig     int
	runConfigs    bool
	logger        *slog.Logger
	configs       *configCache
}

// DefaultMaxFileSize bounds each file the loader reads whole: values.yaml,
// the OpenAPI schemas and Chart.yaml.
const DefaultMaxFileSize = 4 << 20

// DefaultMaxConfigOutput bounds what a hook may print for --config.
const DefaultMaxConfigOutput = 1 << 20

// Option configures a Loader.
type Option func(*Loader)

// WithConfigTimeout bounds each --config run (default 30s).
func WithConfigTimeout(d time.Duration) Option { return func(l *Loader) { l.configTimeout = d } }

// WithParallelism bounds concurrent --config runs (default 2×CPUs).
func WithParallelism(n int) Option { return func(l *Loader) { l.parallel = n } }

// WithLogger sets the logger for warnings and hook output.
func WithLogger(lg *slog.Logger) Option { return func(l *Loader) { l.logger = lg } }

// WithMaxFileSize bounds each file the loader reads whole (default
// DefaultMaxFileSize; n <= 0 keeps it); a larger one fails the load.
func WithMaxFileSize(n int64) Option {
	return func(l *Loader) {
		if n > 0 {
			l.maxFile = n
		}
	}
}

// WithMaxConfigOutput bounds what a hook may print for --config (default
// DefaultMaxConfigOutput; n <= 0 keeps it); more fails the load rather
// than being cut.
func WithMaxConfigOutput(n int) Option {
	return func(l *Loader) {
		if n > 0 {
			l.maxConfig = n
		}
	}
}

// WithHookConfigs says whether Load runs each hook with --config (default
// true). Off, nothing from the tree runs and every Hook.Config is nil: for
// a preview of a tree that is not trusted, never for a model that runs.
func WithHookConfigs(run bool) Option { return func(l *Loader) { l.runConfigs = run } }

// New returns a Loader.
func New(opts ...Option) *Loader {
	l := &Loader{
		configTimeout: 30 * time.Second, parallel: 2 * runtime.NumCPU(), logger: slog.Default(),
		maxFile: DefaultMaxFileSize, maxConfig: DefaultMaxConfigOutput, runConfigs: true, configs: newConfigCache(),
	}
	for _, o := range opts {
		o(l)
	}
	return l
}

// ConfigRuns counts --config executions so far (cache misses).
func (l *Loader) ConfigRuns() int { return l.configs.runCount() }

// cachedConfigs is the number of hook configs the cache holds.
func (l *Loader) cachedConfigs() int { return l.configs.len() }

// Error is a load failure that names the file.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fileErr(path string, err error) error { return &Error{Path: path, Err: err} }

// Load reads a tree. Every read resolves beneath root, so no link, nor a
// chain of links, leads a read outside it (an empty root bounds the modules
// directory, each module and the global hooks directory by itself). Only
// regular files and directories are read. ctx bounds the whole load, reads
// and hashing included. A missing global hooks directory is an empty one;
// a missing modules directory is an error.
func (l *Loader) Load(ctx context.Context, root, modulesDir, globalHooksDir string) (_ *Model, err error) {
	s := newSession(ctx, l.maxFile)
	defer s.close()
	use := l.configs.begin()
	defer func() { l.configs.end(use, err == nil) }()

	modules, global, err := s.openDirs(root, modulesDir, globalHooksDir)
	if err != nil {
		return nil, err
	}
	m := &Model{ModulesDir: modules.abs, GlobalHooksDir: global.abs}
	if m.Global, err = loadGlobal(modules, global); err != nil {
		return nil, err
	}
	if m.Modules, err = loadModules(modules); err != nil {
		return nil, err
	}
	if err := l.configureHooks(ctx, use, m); err != nil {
		return nil, err
	}
	common, err := readValues(modules, "values.yaml")
	if err != nil {
		return nil, err
	}
	m.Values = values.Source{Common: common, CommonFile: modules.path("values.yaml"), GlobalSchemas: m.Global.Schemas}
	for _, mod := range m.Modules {
		m.Values.Modules = append(m.Values.Modules, values.ModuleSource{
			Name: mod.Name, Values: mod.Values, Schemas: mod.Schemas, File: filepath.Join(mod.Dir, "values.yaml"),
		})
	}
	m.Warnings = s.warnings
	// Values errors (bad flags, duplicate keys) fail the load, as the tree is
	// what is wrong; warnings ride along.
	if _, warnings, err := values.NewStore(m.Values); err != nil {
		return nil, err
	} else {
		m.Warnings = append(m.Warnings, warnings...)
	}
	for _, w := range m.Warnings {
		l.logger.Warn(w)
	}
	return m, nil
}

// openDirs opens the modules and global hooks directories beneath root,
// or, with no root, each beneath itself. A directory that does not exist
// comes back with no root: the caller decides whether that is an error.
func (s *session) openDirs(root, modulesDir, globalHooksDir string) (modules, global dir, err error) {
	modulesAbs, err := filepath.Abs(modulesDir)
	if err != nil {
		return dir{}, dir{}, err
	}
	globalAbs, err := filepath.Abs(globalHooksDir)
	if err != nil {
		return dir{}, dir{}, err
	}
	open := s.ownDir
	if root == "" {
		s.ownRoots = true
	} else {
		rootAbs, err := filepath.Abs(root)
		if err != nil {
			return dir{}, dir{}, err
		}
		r, err := s.openRoot(rootAbs)
		if err != nil {
			return dir{}, dir{}, err
		}
		open = func(path string) (dir, error) { return s.dirBeneath(r, rootAbs, path) }
	}
	if modules, err = open(modulesAbs); err != nil {
		return dir{}, dir{}, err
	}
	if modules.root == nil {
		return dir{}, dir{}, fileErr(modulesAbs, errors.New("modules directory not found"))
	}
	global, err = open(globalAbs)
	return modules, global, err
}

func readValues(d dir, entry string) (values.Values, error) {
	b, err := d.readFile(entry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return values.ParseYAML(d.path(entry), b)
}

// readSchemas reads the schemas in parent's openapi directory, if any. The
// directory is resolved first, so a link in its place that leads out is
// the error, rather than the files that cannot be reached through it.
func readSchemas(parent dir) (*values.Schemas, error) {
	d := parent.sub("openapi")
	info, err := optionalStat(parent, "openapi")
	if err != nil {
		return nil, err
	}
	if info != nil && !info.IsDir() {
		return nil, fileErr(d.abs, errors.New("not a directory"))
	}
	read := func(name string) ([]byte, error) {
		if info == nil {
			return nil, nil
		}
		b, err := d.readFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	c, err := read(values.ConfigSchemaFile)
	if err != nil {
		return nil, err
	}
	v, err := read(values.ValuesSchemaFile)
	if err != nil {
		return nil, err
	}
	return values.LoadSchemas(d.abs, c, v)
}

// optionalStat is stat with a missing entry as nil info and no error.
func optionalStat(d dir, entry string) (fs.FileInfo, error) {
	info, err := d.stat(entry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return info, err
}

func loadGlobal(modules, global dir) (*Global, error) {
	g := &Global{Schemas: &values.Schemas{}}
	h := sha256.New()
	if global.root != nil {
		var err error
		if g.Hooks, err = findHooks(global, global.abs, "", map[string]bool{"openapi": true}); err != nil {
			return nil, err
		}
		if g.Schemas, err = readSchemas(global); err != nil {
			return nil, err
		}
		if err := hashTree(h, global); err != nil {
			return nil, err
		}
	}
	if err := hashFile(h, modules, "values.yaml", "values.yaml"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	return g, nil
}

// loadModules loads every module directory, in run order: by numeric
// prefix, then name.
func loadModules(modules dir) ([]*Module, error) {
	_, entries, err := modules.list(func(name string) bool { return strings.HasPrefix(name, ".") })
	if err != nil {
		return nil, err
	}
	var out []*Module
	byKey := map[string]string{}
	for _, e := range entries {
		if !e.isDir {
			continue
		}
		mod, err := loadModule(modules, e.name)
		if err != nil {
			return nil, err
		}
		if prev, dup := byKey[mod.Key]; dup {
			return nil, fileErr(mod.Dir, fmt.Errorf("module %q has the same values key %q as %s", mod.Name, mod.Key, prev))
		}
		byKey[mod.Key] = e.name
		out = append(out, mod)
	}
	slices.SortStableFunc(out, func(a, b *Module) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func loadModule(modules dir, dirName string) (*Module, error) {
	order, name, err := values.ParseModuleDir(dirName)
	if err != nil {
		return nil, fileErr(modules.path(dirName), err)
	}
	key, err := values.ModuleKey(name)
	if err != nil {
		return nil, fileErr(modules.path(dirName), err)
	}
	d, err := modules.s.moduleDir(modules, dirName)
	if err != nil {
		return nil, err
	}
	mod := &Module{Name: name, Key: key, Order: order, Dir: d.abs, DirName: dirName}
	if err := loadModuleHooks(mod, modules, d); err != nil {
		return nil, err
	}
	if mod.Values, err = readValues(d, "values.yaml"); err != nil {
		return nil, err
	}
	if mod.Schemas, err = readSchemas(d); err != nil {
		return nil, err
	}
	if err := findChart(mod, d); err != nil {
		return nil, err
	}
	// the hash walk reads every file of the module, hidden ones too, so it
	// is also what refuses a link out of the tree anywhere in it
	h := sha256.New()
	if err := hashTree(h, d); err != nil {
		return nil, err
	}
	mod.Hash = hex.EncodeToString(h.Sum(nil))
	return mod, nil
}

// moduleDir is a module's directory: beneath the tree's root, or, with no
// root, beneath the module directory itself, as before roots.
func (s *session) moduleDir(modules dir, name string) (dir, error) {
	if !s.ownRoots {
		return modules.sub(name), nil
	}
	r, err := modules.root.OpenRoot(modules.name(name))
	if err != nil {
		return dir{}, modules.explain(name, err)
	}
	s.roots = append(s.roots, r)
	return dir{s: s, root: r, rel: ".", abs: modules.path(name)}, nil
}

// loadModuleHooks finds the module's hooks and its enabled script.
func loadModuleHooks(mod *Module, modules, d dir) error {
	info, err := optionalStat(d, "hooks")
	if err != nil {
		return err
	}
	if info != nil && info.IsDir() {
		if mod.Hooks, err = findHooks(d.sub("hooks"), modules.abs, mod.Name, nil); err != nil {
			return err
		}
	}
	info, err = optionalStat(d, "enabled")
	if err != nil || info == nil || info.IsDir() {
		return err
	}
	if info.Mode()&0o111 == 0 {
		return fileErr(d.path("enabled"), errors.New("the enabled script is not executable (chmod +x)"))
	}
	mod.EnabledScript = d.path("enabled")
	return nil
}

// findChart: Chart.yaml or templates/ make a chart. Helm reads Chart.yaml
// whole, so it is held to the same bound as the files the loader reads.
func findChart(mod *Module, d dir) error {
	info, err := optionalStat(d, "Chart.yaml")
	if err != nil {
		return err
	}
	if info != nil && !info.IsDir() {
		if err := d.checkSize("Chart.yaml", info.Size()); err != nil {
			return err
		}
		mod.HasChart, mod.HasChartFile = true, true
	}
	info, err = optionalStat(d, "templates")
	if err != nil {
		return err
	}
	if info != nil && info.IsDir() {
		mod.HasChart = true
	}
	return nil
}

// configureHooks runs every hook with --config (cached by content) through
// a bounded pool and parses the result.
func (l *Loader) configureHooks(ctx context.Context, use *cacheUse, m *Model) error {
	if !l.runConfigs {
		return nil
	}
	var all []*Hook
	all = append(all, m.Global.Hooks...)
	for _, mod := range m.Modules {
		all = append(all, mod.Hooks...)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(l.parallel)
	for _, h := range all {
		g.Go(func() error {
			cfg, err := l.hookConfig(ctx, use, h)
			if err != nil {
				return fileErr(h.Path, err)
			}
			h.Config = cfg
			return nil
		})
	}
	return g.Wait()
}

func (l *Loader) hookConfig(ctx context.Context, use *cacheUse, h *Hook) (*HookConfig, error) {
	// by the name inside the tree, not the absolute path, so a new git
	// revision (a new directory) reuses the configs of unchanged hooks
	cacheKey := h.Module + "\x00" + h.Name + "\x00" + h.Hash
	if cfg, ok := l.configs.get(use, cacheKey); ok {
		return cfg, nil
	}
	out, err := executor.Run(ctx, executor.Command{
		Path:          h.Path,
		Args:          []string{"--config"},
		Dir:           filepath.Dir(h.Path),
		Env:           []string{"WORKING_DIR=" + h.WorkingDir},
		Timeout:       l.configTimeout,
		CaptureStdout: true,
		// the executor keeps a head and a tail of this size each: output
		// that fits both whole is exactly what was printed, anything
		// longer comes back longer than maxConfig, cut, and is refused
		OutputLimit: (l.maxConfig + 1) / 2,
		Logger:      l.logger.With("hook", h.Name, "phase", "config"),
	})
	if err != nil {
		return nil, fmt.Errorf("run with --config: %w", err)
	}
	if len(out) > l.maxConfig {
		return nil, fmt.Errorf("--config printed more than %d bytes, over the limit for a hook config (refused rather than cut)", l.maxConfig)
	}
	cfg, err := ParseHookConfig(out, h.Module == "")
	if err != nil {
		return nil, fmt.Errorf("hook config: %w", err)
	}
	l.configs.put(use, cacheKey, cfg)
	return cfg, nil
}
