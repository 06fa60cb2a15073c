package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/internal/executor"
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
	// Warnings are problems that do not stop the load.
	Warnings []string
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
	// Hash covers every file of the module.
	Hash string
}

// Hook is one executable found under a hooks directory.
type Hook struct {
	// Name is the path relative to the module's modules directory (module
	// hooks) or GLOBAL_HOOKS_DIR (global hooks): 001-module/hooks/a.sh.
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

// Load reads a tree. modulesDir is one directory or several separated by
// filepath.ListSeparator, as MODULES_DIR lists them; their modules form one
// list, and a module name in two of them is an error naming both. A
// relative directory is inside root (see dirPath); with no root it is
// relative to the working directory.
//
// Every read resolves beneath root, so no link, nor a chain of links, leads
// a read outside it. An empty root bounds each modules directory, each
// module and the global hooks directory by itself; a module's own entry in
// its modules directory may then be a link to a directory anywhere (the
// original addon-operator's module symlinks), which bounds that module.
// Only regular files and directories are read. ctx bounds the whole load,
// reads and hashing included. A missing global hooks directory is an empty
// one; a missing modules directory is an error.
func (l *Loader) Load(ctx context.Context, root, modulesDir, globalHooksDir string) (_ *Model, err error) {
	s := newSession(ctx, l.maxFile)
	defer s.close()
	use := l.configs.begin()
	defer func() { l.configs.end(use, err == nil) }()

	modules, global, err := s.openDirs(root, modulesDir, globalHooksDir)
	if err != nil {
		return nil, err
	}
	m := &Model{GlobalHooksDir: global.abs}
	for _, d := range modules {
		m.ModulesDirs = append(m.ModulesDirs, d.abs)
	}
	m.ModulesDir = strings.Join(m.ModulesDirs, string(filepath.ListSeparator))
	if m.Global, err = loadGlobal(modules, global); err != nil {
		return nil, err
	}
	if m.Modules, err = loadModules(modules); err != nil {
		return nil, err
	}
	if err := l.configureHooks(ctx, use, m); err != nil {
		return nil, err
	}
	for _, mod := range m.Modules {
		m.Values.Modules = append(m.Values.Modules, values.ModuleSource{
			Name: mod.Name, Values: mod.Values, Schemas: mod.Schemas, File: filepath.Join(mod.Dir, "values.yaml"),
		})
	}
	m.Values.GlobalSchemas = m.Global.Schemas
	if m.Values.Common, m.Values.CommonFile, err = commonValues(modules, m.Values); err != nil {
		return nil, err
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

// openDirs opens the modules directories and the global hooks directory
// beneath root, or, with no root, each beneath itself. A global hooks
// directory that does not exist comes back with no root: it is an empty one.
func (s *session) openDirs(root, modulesDirs, globalHooksDir string) (modules []dir, global dir, err error) {
	rootAbs := ""
	open := s.ownDir
	if root == "" {
		s.ownRoots = true
	} else {
		if rootAbs, err = filepath.Abs(root); err != nil {
			return nil, dir{}, err
		}
		r, err := s.openRoot(rootAbs)
		if err != nil {
			return nil, dir{}, err
		}
		open = func(path string) (dir, error) { return s.dirBeneath(r, rootAbs, path) }
	}
	for _, p := range filepath.SplitList(modulesDirs) {
		if p == "" {
			continue
		}
		abs, err := dirPath(root, rootAbs, p)
		if err != nil {
			return nil, dir{}, err
		}
		d, err := open(abs)
		if err != nil {
			return nil, dir{}, err
		}
		if d.root == nil {
			return nil, dir{}, fileErr(abs, errors.New("modules directory not found"))
		}
		modules = append(modules, d)
	}
	if len(modules) == 0 {
		return nil, dir{}, fmt.Errorf("no modules directory in %q", modulesDirs)
	}
	abs, err := dirPath(root, rootAbs, globalHooksDir)
	if err != nil {
		return nil, dir{}, err
	}
	global, err = open(abs)
	return modules, global, err
}

// dirPath is a configured directory's absolute path. With a root, a
// relative directory is inside it: written beneath it, as callers join
// them (root/modules), or relative to it (modules). Without a root its
// links are resolved, so the model's paths stay valid if a link among
// them moves on.
func dirPath(rootRel, rootAbs, p string) (string, error) {
	if rootAbs != "" {
		switch {
		case filepath.IsAbs(p):
			return filepath.Clean(p), nil
		case isBeneath(rootRel, p):
			return filepath.Abs(p)
		}
		return filepath.Join(rootAbs, p), nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// isBeneath: p is written as a path beneath root.
func isBeneath(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(rel)
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

func loadGlobal(modules []dir, global dir) (*Global, error) {
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
	for i, d := range modules {
		name := "values.yaml"
		if i > 0 {
			name = strconv.Itoa(i) + "/values.yaml"
		}
		if err := hashFile(h, d, "values.yaml", name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	return g, nil
}

// commonValues reads the values.yaml of every modules directory into one
// document and names it for messages. The original addon-operator merges
// their global sections, in the order of the list, and so does this; any
// other key set in two of them is an error naming both files. With several
// files each is checked on its own first, so an error names its file.
func commonValues(modules []dir, src values.Source) (values.Values, string, error) {
	type file struct {
		path string
		doc  values.Values
	}
	var files []file
	for _, d := range modules {
		doc, err := readValues(d, "values.yaml")
		if err != nil {
			return nil, "", err
		}
		if doc != nil {
			files = append(files, file{d.path("values.yaml"), doc})
		}
	}
	switch len(files) {
	case 0:
		return nil, modules[0].path("values.yaml"), nil
	case 1:
		return files[0].doc, files[0].path, nil
	}
	out := values.Values{}
	from := map[string]string{}
	for _, f := range files {
		src.Common, src.CommonFile = f.doc, f.path
		if _, _, err := values.NewStore(src); err != nil {
			return nil, "", err
		}
		for k, v := range f.doc {
			prev, dup := from[k]
			if dup && k != values.GlobalKey {
				return nil, "", fileErr(f.path, fmt.Errorf("%s is also set in %s", k, prev))
			}
			from[k] = f.path
			b, okB := out[k].(map[string]any)
			o, okO := v.(map[string]any)
			if dup && okB && okO {
				v = mergeMaps(b, o)
			}
			out[k] = v
		}
	}
	return out, files[0].path, nil
}

// mergeMaps merges over into a copy of base: maps key by key, anything
// else replaced (the values rule).
func mergeMaps(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		b, okB := out[k].(map[string]any)
		o, okO := v.(map[string]any)
		if okB && okO {
			v = mergeMaps(b, o)
		}
		out[k] = v
	}
	return out
}

// loadModules loads the modules of every modules directory, in run order:
// by numeric prefix, then name. A name, or a values key, in two places is
// an error naming both.
func loadModules(modules []dir) ([]*Module, error) {
	var out []*Module
	byName, byKey := map[string]string{}, map[string]string{}
	for _, d := range modules {
		entries, err := d.s.moduleEntries(d)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			mod, err := loadModule(d, e)
			if err != nil {
				return nil, err
			}
			if prev, dup := byName[mod.Name]; dup {
				return nil, fileErr(mod.Dir, fmt.Errorf("module %q is also at %s", mod.Name, prev))
			}
			if prev, dup := byKey[mod.Key]; dup {
				return nil, fileErr(mod.Dir, fmt.Errorf("module %q has the same values key %q as %s", mod.Name, mod.Key, prev))
			}
			byName[mod.Name], byKey[mod.Key] = mod.Dir, mod.Dir
			out = append(out, mod)
		}
	}
	slices.SortStableFunc(out, func(a, b *Module) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func loadModule(modules dir, e moduleEntry) (*Module, error) {
	order, name, err := values.ParseModuleDir(e.name)
	if err != nil {
		return nil, fileErr(modules.path(e.name), err)
	}
	key, err := values.ModuleKey(name)
	if err != nil {
		return nil, fileErr(modules.path(e.name), err)
	}
	d, err := modules.s.moduleDir(modules, e)
	if err != nil {
		return nil, err
	}
	mod := &Module{Name: name, Key: key, Order: order, Dir: d.abs, DirName: e.name}
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

// moduleEntry is a module directory found in a modules directory.
type moduleEntry struct {
	name string
	// target is where a link in the modules directory leads, with no tree
	// root ("" otherwise, or for a directory that is no link).
	target string
}

// moduleEntries lists a modules directory's module directories (dot
// entries and files are skipped). Beneath a tree root a link must lead to
// a directory beneath it; with no root it may lead anywhere, and the
// module it leads to is bounded by itself (see moduleDir).
func (s *session) moduleEntries(modules dir) ([]moduleEntry, error) {
	skip := func(name string) bool { return strings.HasPrefix(name, ".") }
	if !s.ownRoots {
		_, entries, err := modules.list(skip)
		if err != nil {
			return nil, err
		}
		var out []moduleEntry
		for _, e := range entries {
			if e.isDir {
				out = append(out, moduleEntry{name: e.name})
			}
		}
		return out, nil
	}
	_, des, err := modules.readDir()
	if err != nil {
		return nil, err
	}
	var out []moduleEntry
	for _, de := range des {
		if skip(de.Name()) {
			continue
		}
		if de.Type()&fs.ModeSymlink == 0 {
			e, err := modules.resolve(de)
			if err != nil {
				return nil, err
			}
			if e.isDir {
				out = append(out, moduleEntry{name: e.name})
			}
			continue
		}
		e, err := modules.followOut(de.Name())
		if err != nil {
			return nil, err
		}
		if e.target != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// moduleDir is a module's directory: beneath the tree's root, or, with no
// root, beneath the module directory itself (the one a link leads to).
func (s *session) moduleDir(modules dir, e moduleEntry) (dir, error) {
	if !s.ownRoots {
		return modules.sub(e.name), nil
	}
	var r *os.Root
	var err error
	if e.target != "" {
		r, err = os.OpenRoot(e.target)
		err = stripPath(err)
	} else {
		r, err = modules.root.OpenRoot(modules.name(e.name))
	}
	if err != nil {
		return dir{}, modules.explain(e.name, err)
	}
	s.roots = append(s.roots, r)
	return dir{s: s, root: r, rel: ".", abs: modules.path(e.name)}, nil
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
