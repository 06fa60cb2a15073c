package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/lifecycle"
)

// env reads settings from the environment; a bad value is remembered and
// reported, so a typo never silently becomes the default. It also notes
// which of the original addon-operator's names were used or ignored, for
// start to log.
type env struct {
	errs  []error
	notes []note
}

// note is one start-up log line about a setting.
type note struct {
	warn bool
	msg  string
	args []any
}

// str reads the first of names that is set: ours first, then the original
// addon-operator's aliases, which lose when both are set.
func (e *env) str(names []string, def string) string {
	for i, n := range names {
		v, ok := os.LookupEnv(n)
		if !ok || v == "" {
			continue
		}
		if i > 0 {
			e.notes = append(e.notes, note{msg: "setting taken from the original addon-operator's name", args: []any{"env", n, "ours", names[0]}})
		}
		for _, later := range names[i+1:] {
			if os.Getenv(later) != "" {
				e.notes = append(e.notes, note{warn: true, msg: "setting ignored: another name for it is set and wins", args: []any{"env", later, "wins", n}})
			}
		}
		return v
	}
	return def
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: %w", name, v, err))
		return def
	}
	return d
}

// positive reads a whole number of at least 1.
func (e *env) positive(name string, def int) int {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a whole number of at least 1", name, v))
		return def
	}
	return n
}

func (e *env) boolean(name string, def bool) bool {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", name, v))
		return def
	}
	return b
}

// operatorOptions are the operator's own settings (design.md, "The contract").
type operatorOptions struct {
	ModulesDir, GlobalHooksDir string
	// TreeRootAlias maps an image's absolute prefix onto the tree's root
	// (docs/operator.md, "Trees from git").
	TreeRootAlias        string
	Namespace, ConfigMap string
	Listen               listenOptions
	Kube                 kubeOptions
	// TempDir holds the files handed to hooks ("": the system's).
	TempDir                string
	HookTimeout            time.Duration
	RetryMin, RetryMax     time.Duration
	ResourcesCheckInterval time.Duration
	Pprof                  bool
	PurgeLimit             int // lifecycle.PurgeHalf, PurgeNone or a number
	ParallelModules        int
	// Drift is what is done about drift: warn, correct or off
	// (docs/operator.md, "Drift"); DriftIgnoreManagers own fields that are
	// never drift.
	Drift               string
	DriftIgnoreManagers []string
	// DriftSensitiveKinds are kinds ([group/]Kind) whose values a live
	// diff never shows, as a Secret's (docs/security.md, "Who sees what").
	DriftSensitiveKinds []string
	// driftSensitive is DriftSensitiveKinds parsed (startOptions.finish).
	driftSensitive []schema.GroupKind

	// ValuesSecret names the values Secret ("": none; docs/operator.md,
	// "Secrets").
	ValuesSecret string
}

func (o *operatorOptions) bind(fs *pflag.FlagSet, e *env) {
	modulesDir := e.str([]string{"MODULES_DIR", "ADDON_OPERATOR_MODULES_DIR"}, "")
	fs.StringVar(&o.ModulesDir, "modules-dir", modulesDir, "modules directories, separated by ':' (env MODULES_DIR, ADDON_OPERATOR_MODULES_DIR; default /modules, or modules inside a git repository)")
	fs.StringVar(&o.GlobalHooksDir, "global-hooks-dir", e.str([]string{"GLOBAL_HOOKS_DIR", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR"}, ""), "global hooks directory (env GLOBAL_HOOKS_DIR, ADDON_OPERATOR_GLOBAL_HOOKS_DIR; default /global-hooks, or global-hooks inside a git repository)")
	bindTreeRootAlias(fs, e, &o.TreeRootAlias)
	fs.StringVar(&o.Namespace, "namespace", e.str([]string{"ADDON_OPERATOR_NAMESPACE"}, podNamespace()), "namespace of releases and the ConfigMap (env ADDON_OPERATOR_NAMESPACE)")
	fs.StringVar(&o.ConfigMap, "config-map", e.str([]string{"ADDON_OPERATOR_CONFIG_MAP"}, "addon-operator"), "values ConfigMap name (env ADDON_OPERATOR_CONFIG_MAP)")
	fs.StringVar(&o.ValuesSecret, "values-secret", e.str([]string{"ADDON_OPERATOR_VALUES_SECRET"}, ""), "a Secret in the namespace in the ConfigMap's shape, merged over it; its values are secret and shown as <redacted> (env ADDON_OPERATOR_VALUES_SECRET; default: none)")
	o.Listen.bind(fs, e)
	o.Kube.bind(fs, e)
	fs.StringVar(&o.TempDir, "tmp-dir", e.str([]string{"ADDON_OPERATOR_TMP_DIR"}, ""), "directory of the files handed to hooks, made if missing (env ADDON_OPERATOR_TMP_DIR; default: the system's)")
	fs.DurationVar(&o.HookTimeout, "hook-timeout", e.duration("ADDON_OPERATOR_HOOK_TIMEOUT", 10*time.Minute), "timeout of one hook run (env ADDON_OPERATOR_HOOK_TIMEOUT)")
	fs.DurationVar(&o.RetryMin, "retry-min", e.duration("ADDON_OPERATOR_RETRY_MIN", 5*time.Second), "first retry delay of a failed task (env ADDON_OPERATOR_RETRY_MIN)")
	fs.DurationVar(&o.RetryMax, "retry-max", e.duration("ADDON_OPERATOR_RETRY_MAX", 30*time.Second), "longest retry delay (env ADDON_OPERATOR_RETRY_MAX)")
	fs.DurationVar(&o.ResourcesCheckInterval, "resources-check-interval", e.duration("ADDON_OPERATOR_RESOURCES_CHECK_INTERVAL", 5*time.Minute), "period of the absent-resources check, auto-healing (env ADDON_OPERATOR_RESOURCES_CHECK_INTERVAL; 0 turns it off)")
	fs.BoolVar(&o.Pprof, "pprof", e.boolean("ADDON_OPERATOR_PPROF", false), "serve /debug/pprof on the listen address (env ADDON_OPERATOR_PPROF=true)")
	fs.IntVar(&o.ParallelModules, "parallel-modules", e.positive("ADDON_OPERATOR_PARALLEL_MODULES", defaultParallelModules()), "modules of one weight run at once; 1 runs them one by one (env ADDON_OPERATOR_PARALLEL_MODULES; default twice the CPUs the process may use)")
	fs.StringVar(&o.Drift, "drift", e.str([]string{"ADDON_OPERATOR_DRIFT"}, "correct"), "what is done about release objects that differ from the chart: correct, warn or off; a module's <module>Drift ConfigMap key overrides correct and warn (env ADDON_OPERATOR_DRIFT)")
	fs.StringSliceVar(&o.DriftIgnoreManagers, "drift-ignore-managers", e.list("ADDON_OPERATOR_DRIFT_IGNORE_MANAGERS", drift.DefaultIgnoreManagers), "field managers whose fields are never drift, besides writes through a subresource (env ADDON_OPERATOR_DRIFT_IGNORE_MANAGERS, comma-separated)")
	fs.StringSliceVar(&o.DriftSensitiveKinds, "drift-sensitive-kinds", e.list("ADDON_OPERATOR_DRIFT_SENSITIVE_KINDS", nil), "kinds, Kind or group/Kind, whose values module diff never shows, as a Secret's data (env ADDON_OPERATOR_DRIFT_SENSITIVE_KINDS, comma-separated)")
	o.PurgeLimit = e.purgeLimit("ADDON_OPERATOR_PURGE_LIMIT")
	fs.Func("purge-limit", "most modules one revision may purge: a number (0: none without confirmation) or 'half' (env ADDON_OPERATOR_PURGE_LIMIT; default half of the enabled modules, never all)", func(v string) error {
		limit, err := parsePurgeLimit(v)
		o.PurgeLimit = limit
		return err
	})
}

// defaultListenPort is the port of a listen address given without one.
const defaultListenPort = "9115"

// listenOptions are the HTTP listen address: ours is host:port in one
// setting, the original addon-operator's a host and a port apart. Start
// listens there, and the subcommands that ask a running operator find it
// there, so both read the same settings.
type listenOptions struct{ Address, Port string }

func (o *listenOptions) bind(fs *pflag.FlagSet, e *env) {
	addr := e.str([]string{"ADDON_OPERATOR_LISTEN_ADDRESS", "ADDON_OPERATOR_PROMETHEUS_LISTEN_ADDRESS"}, "")
	usage := "HTTP address for /metrics, /healthz, /readyz, /queue, /status and /debug: host:port, or a host with --prometheus-listen-port (env ADDON_OPERATOR_LISTEN_ADDRESS; default :" + defaultListenPort + ")"
	fs.StringVar(&o.Address, "listen-address", addr, usage)
	fs.StringVar(&o.Address, "prometheus-listen-address", addr, "the original addon-operator's name of --listen-address")
	fs.StringVar(&o.Port, "prometheus-listen-port", e.str([]string{"ADDON_OPERATOR_LISTEN_PORT", "ADDON_OPERATOR_PROMETHEUS_LISTEN_PORT"}, ""), "port for a listen address given as a bare host (env ADDON_OPERATOR_LISTEN_PORT; default "+defaultListenPort+")")
}

// address is host:port to listen on. An address with a port wins over the
// port setting; a bare host (a pod IP, as the original's manifests set)
// takes the port setting or the default port.
func (o listenOptions) address() (string, error) {
	port := o.Port
	if port == "" {
		port = defaultListenPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("listen port %q: want a number from 0 to 65535", o.Port)
	}
	if o.Address == "" {
		return ":" + port, nil
	}
	if host, p, err := net.SplitHostPort(o.Address); err == nil {
		if _, err := strconv.Atoi(p); err != nil {
			return "", fmt.Errorf("listen address %q: port %q is not a number", o.Address, p)
		}
		return net.JoinHostPort(host, p), nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(o.Address, "["), "]")
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", fmt.Errorf("listen address %q: want host:port or a host", o.Address)
	}
	return net.JoinHostPort(host, port), nil
}

// url is where a client on the operator's host reaches its listen
// address: an address on every interface (:9115) is asked on loopback.
func (o listenOptions) url() (string, error) {
	addr, err := o.address()
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// kubeOptions choose the API server: a kubeconfig (and a context in it)
// or the in-cluster config, optionally with another server address.
type kubeOptions struct{ Config, Context, Server string }

func (o *kubeOptions) bind(fs *pflag.FlagSet, e *env) {
	cfg := e.str([]string{"KUBECONFIG", "KUBE_CONFIG"}, "")
	fs.StringVar(&o.Config, "kubeconfig", cfg, "kubeconfig file (env KUBECONFIG, KUBE_CONFIG; default: in-cluster config)")
	fs.StringVar(&o.Config, "kube-config", cfg, "the original addon-operator's name of --kubeconfig")
	fs.StringVar(&o.Context, "kube-context", e.str([]string{"KUBE_CONTEXT"}, ""), "context of the kubeconfig to use (env KUBE_CONTEXT; default: its current context)")
	fs.StringVar(&o.Server, "kube-server", e.str([]string{"KUBE_SERVER"}, ""), "API server address, over the kubeconfig's (env KUBE_SERVER)")
}

// parsePurgeLimit reads ADDON_OPERATOR_PURGE_LIMIT: "half" (or empty), or
// a number of modules, 0 meaning none without confirmation.
func parsePurgeLimit(v string) (int, error) {
	if v == "" || v == "half" {
		return lifecycle.PurgeHalf, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want 'half' or a number ≥ 0, got %q", v)
	}
	if n == 0 {
		return lifecycle.PurgeNone, nil
	}
	return n, nil
}

func (e *env) purgeLimit(name string) int {
	limit, err := parsePurgeLimit(os.Getenv(name))
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %w", name, err))
	}
	return limit
}

// leaderOptions configure leader election (off by default: one replica).
type leaderOptions struct {
	Enabled       bool
	Name          string
	LeaseDuration time.Duration
}

func (o *leaderOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.BoolVar(&o.Enabled, "leader-election", e.boolean("ADDON_OPERATOR_LEADER_ELECTION", false), "act only while holding a Lease, so replicas can stand by (env ADDON_OPERATOR_LEADER_ELECTION=true)")
	fs.StringVar(&o.Name, "leader-election-lease", e.str([]string{"ADDON_OPERATOR_LEADER_ELECTION_LEASE"}, ""), "name of the Lease in the operator's namespace (env ADDON_OPERATOR_LEADER_ELECTION_LEASE; default: the values ConfigMap's name)")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", e.duration("ADDON_OPERATOR_LEADER_ELECTION_LEASE_DURATION", 15*time.Second), "how long a leader that stopped renewing keeps the Lease (env ADDON_OPERATOR_LEADER_ELECTION_LEASE_DURATION)")
}

// podNamespace is the pod's namespace when running in a cluster, else "default".
func podNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// logOptions configure log/slog.
type logOptions struct {
	Level, Type string
	NoTime      bool
}

func (o *logOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&o.Level, "log-level", e.str([]string{"LOG_LEVEL", "RLOG_LOG_LEVEL"}, "info"), "debug, info, warn or error (env LOG_LEVEL, RLOG_LOG_LEVEL)")
	fs.BoolFunc("debug", "the same as --log-level=debug", func(v string) error {
		on, err := strconv.ParseBool(v)
		if on {
			o.Level = "debug"
		}
		return err
	})
	fs.StringVar(&o.Type, "log-type", e.str([]string{"LOG_TYPE"}, "json"), "json or text (env LOG_TYPE; color is text)")
	fs.BoolVar(&o.NoTime, "log-no-time", e.boolean("LOG_NO_TIME", false), "leave the time out of log lines, for a collector that adds its own (env LOG_NO_TIME=true)")
}

func (o *logOptions) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(o.Level))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", o.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	if o.NoTime {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	switch strings.ToLower(o.Type) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "color":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log type %q: want json or text", o.Type)
}

// err is every bad environment value, reported once flags are parsed.
// list reads a comma-separated list (set and empty: an empty list).
func (e *env) list(name string, def []string) []string {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (e *env) err() error { return errors.Join(e.errs...) }

// gitOptions are the git source's settings (design.md, GIT_*).
type gitOptions struct {
	URL, Ref string
	// ExtraPaths are more paths inside the repository to check out, beside
	// the modules and global hooks directories: what their links and
	// $refs lead to (docs/operator.md, "Trees from git").
	ExtraPaths     string
	PollInterval   time.Duration
	CheckoutDir    string
	Timeout        time.Duration
	Username       string
	PasswordFile   string
	TokenFile      string
	SSHKeyFile     string
	KnownHostsFile string
	WebhookSecret  string
	VerifyKeysDir  string
	// limits of one revision (gitsync.Options; 0: its default, -1: none)
	MaxFileSize, MaxCheckoutSize int64
	MaxFiles                     int
}

func (o *gitOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&o.URL, "git-url", e.str([]string{"GIT_URL"}, ""), "git repository URL: https, ssh, git@host:path, file:// or a local path (env GIT_URL; empty: no-git mode)")
	fs.StringVar(&o.Ref, "git-ref", e.str([]string{"GIT_REF"}, ""), "branch, tag, full ref or commit SHA (env GIT_REF; default: the remote's HEAD)")
	fs.StringVar(&o.ExtraPaths, "git-extra-paths", e.str([]string{"GIT_EXTRA_PATHS"}, ""), "more paths inside the repository to check out, separated by ':', such as helm_lib:candi/openapi: what the modules' links and schema $refs lead to (env GIT_EXTRA_PATHS)")
	fs.DurationVar(&o.PollInterval, "git-poll-interval", e.duration("GIT_POLL_INTERVAL", time.Minute), "poll interval (env GIT_POLL_INTERVAL)")
	fs.StringVar(&o.CheckoutDir, "git-checkout-dir", e.str([]string{"GIT_CHECKOUT_DIR"}, "/var/lib/addon-operator/git"), "where revisions are checked out (env GIT_CHECKOUT_DIR)")
	fs.DurationVar(&o.Timeout, "git-timeout", e.duration("GIT_TIMEOUT", time.Minute), "timeout of each network operation (env GIT_TIMEOUT)")
	fs.StringVar(&o.Username, "git-username", e.str([]string{"GIT_USERNAME"}, ""), "user name for https (env GIT_USERNAME)")
	fs.StringVar(&o.PasswordFile, "git-password-file", e.str([]string{"GIT_PASSWORD_FILE"}, ""), "file with the https password (env GIT_PASSWORD_FILE)")
	fs.StringVar(&o.TokenFile, "git-token-file", e.str([]string{"GIT_TOKEN_FILE"}, ""), "file with an https token (env GIT_TOKEN_FILE)")
	fs.StringVar(&o.SSHKeyFile, "git-ssh-key-file", e.str([]string{"GIT_SSH_KEY_FILE"}, ""), "ssh private key file (env GIT_SSH_KEY_FILE)")
	fs.StringVar(&o.WebhookSecret, "git-webhook-secret-file", e.str([]string{"GIT_WEBHOOK_SECRET_FILE"}, ""), "file with the webhook secret; enables POST /hooks/git (env GIT_WEBHOOK_SECRET_FILE)")
	fs.StringVar(&o.VerifyKeysDir, "git-verify-keys-dir", e.str([]string{"GIT_VERIFY_KEYS_DIR"}, ""), "directory of trusted OpenPGP public keys; enables commit signature verification (env GIT_VERIFY_KEYS_DIR)")
	fs.StringVar(&o.KnownHostsFile, "git-known-hosts-file", e.str([]string{"GIT_KNOWN_HOSTS_FILE"}, ""), "known_hosts file (env GIT_KNOWN_HOSTS_FILE; default ~/.ssh/known_hosts)")
	o.MaxFileSize = e.size("GIT_MAX_FILE_SIZE")
	o.MaxCheckoutSize = e.size("GIT_MAX_CHECKOUT_SIZE")
	o.MaxFiles = int(e.size("GIT_MAX_FILES"))
	fs.Func("git-max-file-size", "largest file of a revision, e.g. 16Mi (env GIT_MAX_FILE_SIZE; default 16Mi; -1: no limit)", sizeFlag(&o.MaxFileSize))
	fs.Func("git-max-checkout-size", "largest revision on disk, e.g. 512Mi (env GIT_MAX_CHECKOUT_SIZE; default 512Mi; -1: no limit)", sizeFlag(&o.MaxCheckoutSize))
	fs.Func("git-max-files", "most files of a revision (env GIT_MAX_FILES; default 20000; -1: no limit)", func(v string) error {
		n, err := parseSize(v)
		o.MaxFiles = int(n)
		return err
	})
}

// parseSize reads a size limit: a quantity such as 16Mi or 20000, or -1
// for none.
func parseSize(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if v == "-1" {
		return -1, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("want a positive size such as 16Mi, or -1 for none; got %q", v)
	}
	return q.Value(), nil
}

func sizeFlag(dst *int64) func(string) error {
	return func(v string) error {
		n, err := parseSize(v)
		*dst = n
		return err
	}
}

func (e *env) size(name string) int64 {
	n, err := parseSize(os.Getenv(name))
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %w", name, err))
	}
	return n
}

// inRepo checks that each directory of a setting (a ':'-separated list)
// is a relative path inside the repository, and cleans it; why says what
// makes it so ("with GIT_URL").
func inRepo(what, why, list string) ([]string, error) {
	var out []string
	for _, p := range filepath.SplitList(list) {
		if p == "" {
			continue
		}
		clean := filepath.Clean(p)
		if !filepath.IsLocal(clean) {
			return nil, fmt.Errorf("%s %q: %s it is a path inside the repository", what, p, why)
		}
		out = append(out, clean)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %q: no directory", what, list)
	}
	return out, nil
}

// oneInRepo is inRepo for a setting of one directory.
func oneInRepo(what, why, p string) (string, error) {
	dirs, err := inRepo(what, why, p)
	if err != nil {
		return "", err
	}
	if len(dirs) > 1 {
		return "", fmt.Errorf("%s %q: one directory, not a list", what, p)
	}
	return dirs[0], nil
}

// bindTreeRootAlias binds --tree-root-alias, which start, render and diff
// share; a value that is not an absolute path below / is an error.
func bindTreeRootAlias(fs *pflag.FlagSet, e *env, into *string) {
	v := e.str([]string{"ADDON_OPERATOR_TREE_ROOT_ALIAS"}, "")
	if err := checkTreeRootAlias(v); err != nil {
		e.errs = append(e.errs, fmt.Errorf("ADDON_OPERATOR_TREE_ROOT_ALIAS=%q: %w", v, err))
	}
	fs.Var(&aliasValue{into}, "tree-root-alias", "an absolute prefix (such as /deckhouse) that symlink targets and schema $refs use for the repository's root, as trees built for an image do (env ADDON_OPERATOR_TREE_ROOT_ALIAS)")
	*into = v
}

func checkTreeRootAlias(v string) error {
	if v != "" && (!filepath.IsAbs(v) || filepath.Clean(v) == "/") {
		return errors.New("want an absolute path other than /, such as /deckhouse")
	}
	return nil
}

// aliasValue is --tree-root-alias, checked as it is set.
type aliasValue struct{ p *string }

func (a *aliasValue) String() string {
	if a.p == nil {
		return ""
	}
	return *a.p
}
func (a *aliasValue) Set(v string) error {
	if err := checkTreeRootAlias(v); err != nil {
		return err
	}
	*a.p = v
	return nil
}
func (a *aliasValue) Type() string { return "path" }

// extraPaths is --git-extra-paths as paths inside the repository (none
// when empty).
func extraPaths(list string) ([]string, error) {
	if strings.Trim(list, string(filepath.ListSeparator)) == "" {
		return nil, nil
	}
	return inRepo("GIT_EXTRA_PATHS", "with GIT_URL", list)
}

// defaultParallelModules is twice GOMAXPROCS, the CPUs the process may use
// (a container's CPU limit bounds it): a module run waits on its hooks'
// processes and on the API server, and two runs a CPU kept the CPUs busy
// where one a CPU left them waiting (docs/performance.md, "The fourth
// round").
func defaultParallelModules() int { return 2 * runtime.GOMAXPROCS(0) }
