package loader

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
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
	Config     *HookConfig
	Hash       string
}

// Loader loads trees. It caches hook configurations by the hook file's
// content, so a reload does not run unchanged hooks with --config again.
type Loader struct {
	configTimeout time.Duration
	parallel      int
	logger        *slog.Logger

	mu    sync.Mutex
	cache map[string]*HookConfig // by module, name in the tree and content hash
	runs  int
}

// Option configures a Loader.
type Option func(*Loader)

// WithConfigTimeout bounds each --config run (default 30s).
func WithConfigTimeout(d time.Duration) Option { return func(l *Loader) { l.configTimeout = d } }

// WithParallelism bounds concurrent --config runs (default 2×CPUs).
func WithParallelism(n int) Option { return func(l *Loader) { l.parallel = n } }

// WithLogger sets the logger for warnings and hook output.
func WithLogger(lg *slog.Logger) Option { return func(l *Loader) { l.logger = lg } }

// New returns a Loader.
func New(opts ...Option) *Loader {
	l := &Loader{configTimeout: 30 * time.Second, parallel: 2 * runtime.NumCPU(), logger: slog.Default(), cache: map[string]*HookConfig{}}
	for _, o := range opts {
		o(l)
	}
	return l
}

// ConfigRuns counts --config executions so far (cache misses).
func (l *Loader) ConfigRuns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs
}

// Error is a load failure that names the file.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fileErr(path string, err error) error { return &Error{Path: path, Err: err} }

// Load reads a tree. root bounds symlinks: nothing may lead outside it (an
// empty root bounds each directory by itself). A missing global hooks
// directory is an empty one; a missing modules directory is an error.
func (l *Loader) Load(ctx context.Context, root, modulesDir, globalHooksDir string) (*Model, error) {
	modulesDir, err := filepath.Abs(modulesDir)
	if err != nil {
		return nil, err
	}
	globalHooksDir, err = filepath.Abs(globalHooksDir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(modulesDir); err != nil || !st.IsDir() {
		return nil, fileErr(modulesDir, errors.New("modules directory not found"))
	}
	m := &Model{ModulesDir: modulesDir, GlobalHooksDir: globalHooksDir}
	w := &walker{root: root, warnings: &m.Warnings}

	global, err := l.loadGlobal(w, modulesDir, globalHooksDir)
	if err != nil {
		return nil, err
	}
	m.Global = global
	entries, err := os.ReadDir(modulesDir)
	if err != nil {
		return nil, fileErr(modulesDir, err)
	}
	byName := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		full := filepath.Join(modulesDir, e.Name())
		info, err := w.stat(full, modulesDir)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			continue
		}
		mod, err := l.loadModule(w, modulesDir, full, e.Name())
		if err != nil {
			return nil, err
		}
		if prev, dup := byName[mod.Key]; dup {
			return nil, fileErr(full, fmt.Errorf("module %q has the same values key %q as %s", mod.Name, mod.Key, prev))
		}
		byName[mod.Key] = e.Name()
		m.Modules = append(m.Modules, mod)
	}
	slices.SortStableFunc(m.Modules, func(a, b *Module) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})

	if err := l.configureHooks(ctx, m); err != nil {
		return nil, err
	}

	commonFile := filepath.Join(modulesDir, "values.yaml")
	common, err := readValues(commonFile)
	if err != nil {
		return nil, err
	}
	m.Values = values.Source{Common: common, CommonFile: commonFile, GlobalSchemas: global.Schemas}
	for _, mod := range m.Modules {
		m.Values.Modules = append(m.Values.Modules, values.ModuleSource{
			Name: mod.Name, Values: mod.Values, Schemas: mod.Schemas, File: filepath.Join(mod.Dir, "values.yaml"),
		})
	}
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

func readValues(path string) (values.Values, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fileErr(path, err)
	}
	return values.ParseYAML(path, b)
}

func readSchemas(w *walker, dir, boundary string) (*values.Schemas, error) {
	read := func(name string) ([]byte, error) {
		p := filepath.Join(dir, name)
		if _, err := w.stat(p, boundary); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fileErr(p, err)
		}
		return b, nil
	}
	c, err := read(values.ConfigSchemaFile)
	if err != nil {
		return nil, err
	}
	v, err := read(values.ValuesSchemaFile)
	if err != nil {
		return nil, err
	}
	return values.LoadSchemas(dir, c, v)
}

func (l *Loader) loadGlobal(w *walker, modulesDir, dir string) (*Global, error) {
	g := &Global{}
	h := sha256.New()
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		hooks, err := w.findHooks(dir, dir, "", map[string]bool{"openapi": true})
		if err != nil {
			return nil, err
		}
		g.Hooks = hooks
		sch, err := readSchemas(w, filepath.Join(dir, "openapi"), dir)
		if err != nil {
			return nil, err
		}
		g.Schemas = sch
		if err := hashTree(h, dir); err != nil {
			return nil, err
		}
	} else {
		g.Schemas = &values.Schemas{}
	}
	if err := hashFile(h, filepath.Join(modulesDir, "values.yaml"), "values.yaml"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	return g, nil
}

func (l *Loader) loadModule(w *walker, modulesDir, dir, dirName string) (*Module, error) {
	order, name, err := values.ParseModuleDir(dirName)
	if err != nil {
		return nil, fileErr(dir, err)
	}
	key, err := values.ModuleKey(name)
	if err != nil {
		return nil, fileErr(dir, err)
	}
	mod := &Module{Name: name, Key: key, Order: order, Dir: dir, DirName: dirName}
	hooksDir := filepath.Join(dir, "hooks")
	if st, err := w.stat(hooksDir, dir); err == nil && st.IsDir() {
		if mod.Hooks, err = w.findHooks(hooksDir, modulesDir, name, nil); err != nil {
			return nil, err
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	enabled := filepath.Join(dir, "enabled")
	if st, err := w.stat(enabled, dir); err == nil && !st.IsDir() {
		if st.Mode()&0o111 == 0 {
			return nil, fileErr(enabled, errors.New("the enabled script is not executable (chmod +x)"))
		}
		mod.EnabledScript = enabled
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if mod.Values, err = readValues(filepath.Join(dir, "values.yaml")); err != nil {
		return nil, err
	}
	if mod.Schemas, err = readSchemas(w, filepath.Join(dir, "openapi"), dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil {
		mod.HasChart, mod.HasChartFile = true, true
	}
	if st, err := os.Stat(filepath.Join(dir, "templates")); err == nil && st.IsDir() {
		mod.HasChart = true
	}
	if err := w.checkLinks(dir, dir); err != nil {
		return nil, err
	}
	h := sha256.New()
	if err := hashTree(h, dir); err != nil {
		return nil, err
	}
	mod.Hash = hex.EncodeToString(h.Sum(nil))
	return mod, nil
}

// configureHooks runs every hook with --config (cached by content) through
// a bounded pool and parses the result.
func (l *Loader) configureHooks(ctx context.Context, m *Model) error {
	var all []*Hook
	all = append(all, m.Global.Hooks...)
	for _, mod := range m.Modules {
		all = append(all, mod.Hooks...)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(l.parallel)
	for _, h := range all {
		g.Go(func() error {
			cfg, err := l.hookConfig(ctx, h)
			if err != nil {
				return fileErr(h.Path, err)
			}
			h.Config = cfg
			return nil
		})
	}
	return g.Wait()
}

func (l *Loader) hookConfig(ctx context.Context, h *Hook) (*HookConfig, error) {
	// by the name inside the tree, not the absolute path, so a new git
	// revision (a new directory) reuses the configs of unchanged hooks
	cacheKey := h.Module + "\x00" + h.Name + "\x00" + h.Hash
	l.mu.Lock()
	cfg, ok := l.cache[cacheKey]
	if !ok {
		l.runs++
	}
	l.mu.Unlock()
	if ok {
		return cfg, nil
	}
	out, err := executor.Run(ctx, executor.Command{
		Path:          h.Path,
		Args:          []string{"--config"},
		Dir:           filepath.Dir(h.Path),
		Env:           []string{"WORKING_DIR=" + h.WorkingDir},
		Timeout:       l.configTimeout,
		CaptureStdout: true,
		Logger:        l.logger.With("hook", h.Name, "phase", "config"),
	})
	if err != nil {
		return nil, fmt.Errorf("run with --config: %w", err)
	}
	cfg, err = ParseHookConfig(out, h.Module == "")
	if err != nil {
		return nil, fmt.Errorf("hook config: %w", err)
	}
	l.mu.Lock()
	l.cache[cacheKey] = cfg
	l.mu.Unlock()
	return cfg, nil
}

// walker walks directories within a boundary and collects warnings.
type walker struct {
	root     string
	warnings *[]string
}

// boundaryFor is the directory nothing may lead out of.
func (w *walker) boundaryFor(fallback string) string {
	if w.root != "" {
		return w.root
	}
	return fallback
}

// stat follows a symlink only if it stays inside the boundary.
func (w *walker) stat(path, boundary string) (fs.FileInfo, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return info, nil
	}
	if err := w.checkLink(path, boundary); err != nil {
		return nil, err
	}
	info, err = os.Stat(path)
	if err != nil {
		return nil, fileErr(path, fmt.Errorf("broken symlink: %w", err))
	}
	return info, nil
}

func (w *walker) checkLink(path, boundary string) error {
	b, err := filepath.EvalSymlinks(w.boundaryFor(boundary))
	if err != nil {
		return fileErr(boundary, err)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileErr(path, fmt.Errorf("broken symlink: %w", err))
	}
	if target != b && !strings.HasPrefix(target, b+string(filepath.Separator)) {
		return fileErr(path, fmt.Errorf("symlink leads out of the tree (to %s)", target))
	}
	return nil
}

// checkLinks refuses any symlink under dir that leads outside the boundary.
func (w *walker) checkLinks(dir, boundary string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fileErr(p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return w.checkLink(p, boundary)
		}
		return nil
	})
}

// findHooks lists the executable files under dir, recursively and sorted,
// skipping dot entries and the named top-level directories. Names are
// relative to nameBase.
func (w *walker) findHooks(dir, nameBase, module string, skipTop map[string]bool) ([]*Hook, error) {
	var hooks []*Hook
	boundary := w.boundaryFor(dir)
	if module != "" {
		boundary = w.boundaryFor(filepath.Dir(dir))
	}
	visited := map[string]bool{}
	var walk func(string) error
	walk = func(d string) error {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fileErr(d, err)
		}
		if visited[real] {
			return nil
		}
		visited[real] = true
		entries, err := os.ReadDir(d)
		if err != nil {
			return fileErr(d, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") || (d == dir && skipTop[e.Name()]) {
				continue
			}
			p := filepath.Join(d, e.Name())
			info, err := w.stat(p, boundary)
			if err != nil {
				return err
			}
			if info.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			rel, _ := filepath.Rel(nameBase, p)
			if info.Mode()&0o111 == 0 {
				if looksLikeHook(p) {
					*w.warnings = append(*w.warnings, fmt.Sprintf("%s: looks like a hook but is not executable (chmod +x); skipped", p))
				}
				continue
			}
			content, err := os.ReadFile(p)
			if err != nil {
				return fileErr(p, err)
			}
			sum := sha256.Sum256(content)
			hooks = append(hooks, &Hook{Name: rel, Path: p, Module: module, WorkingDir: dir, Hash: hex.EncodeToString(sum[:])})
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	return hooks, nil
}

// looksLikeHook: a script extension or a shebang line.
func looksLikeHook(path string) bool {
	switch filepath.Ext(path) {
	case ".sh", ".py", ".rb", ".pl", ".bash":
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadBytes('\n')
	return bytes.HasPrefix(line, []byte("#!"))
}

// hashTree writes every file under dir (path, mode, content) into h.
func hashTree(h io.Writer, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fileErr(p, err)
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		return hashFile(h, p, rel)
	})
}

func hashFile(h io.Writer, path, name string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fileErr(path, err)
	}
	defer f.Close()
	fmt.Fprintf(h, "%s\x00%o\x00%d\x00", name, info.Mode().Perm()&0o111, info.Size())
	_, err = io.Copy(h, f)
	return err
}
