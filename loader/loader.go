package loader

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/values"
)

// Loader loads trees. It caches hook configurations by the hook file's
// content, so a reload does not run unchanged hooks with --config again.
type Loader struct {
	configTimeout time.Duration
	parallel      int
	maxFile       int64
	maxConfig     int
	runConfigs    bool
	alias         string                  // WithTreeRootAlias
	cluster       *clusterconfig.Settings // WithClusterConfig
	secrets       *secretOptions          // WithSecrets
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

// WithClusterConfig makes Load read the cluster's config from the tree
// (docs/operator.md, "Config in git") into Model.Config, beneath the root
// Load is given; the tree's module keys refuse a key for a module it
// lacks. A config that does not load fails the load, naming the file and
// key, so the revision is refused with it.
func WithClusterConfig(s clusterconfig.Settings) Option {
	return func(l *Loader) { l.cluster = &s }
}

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
	s := newSession(ctx, l.maxFile, l.alias)
	s.secrets = l.secrets
	if s.secrets == nil && l.cluster != nil && (l.cluster.Keyring != nil || l.cluster.Preview) {
		// one key setting decrypts the config and the values files alike
		s.secrets = &secretOptions{keyring: l.cluster.Keyring, preview: l.cluster.Preview}
	}
	defer s.close()
	use := l.configs.begin()
	defer func() { l.configs.end(use, err == nil) }()

	modules, global, err := s.openDirs(root, modulesDir, globalHooksDir)
	if err != nil {
		return nil, err
	}
	m := &Model{GlobalHooksDir: global.abs, root: s.tree.abs, alias: l.alias}
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
			Scripted: mod.EnabledScript != "",
		})
	}
	m.Values.GlobalSchemas = m.Global.Schemas
	if m.Values.Common, m.Values.CommonFile, err = commonValues(modules, m.Values); err != nil {
		return nil, err
	}
	if l.cluster != nil {
		if m.Config, err = l.loadConfig(ctx, root, m); err != nil {
			return nil, err
		}
	}
	m.Encrypted = s.encrypted
	m.Placeholders = s.placeholders || (m.Config != nil && len(m.Config.Encrypted) > 0 && l.configKeyless())
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

// configKeyless: the cluster's config is previewed without a key, as
// loadConfig reads it.
func (l *Loader) configKeyless() bool {
	if l.cluster.Keyring != nil || l.cluster.Preview {
		return l.cluster.Keyring == nil
	}
	return l.secrets != nil && l.secrets.keyring == nil
}

// loadConfig reads the cluster's config from the tree's root, knowing the
// tree's module keys.
func (l *Loader) loadConfig(ctx context.Context, root string, m *Model) (*clusterconfig.Config, error) {
	if root == "" {
		return nil, errors.New("the cluster's config in git needs the tree's root (a git source)")
	}
	s := *l.cluster
	if s.Keyring == nil && !s.Preview && l.secrets != nil {
		// one key setting decrypts the config and the values files alike
		s.Keyring, s.Preview = l.secrets.keyring, l.secrets.preview
	}
	s.Modules = make([]string, 0, len(m.Modules))
	for _, mod := range m.Modules {
		s.Modules = append(s.Modules, mod.Key)
	}
	return clusterconfig.Load(ctx, root, s)
}
