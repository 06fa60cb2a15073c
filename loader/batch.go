package loader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/executor"
)

// Batch hooks are module-sdk's compiled hooks: one executable answers
// `hook config` with the configs of every hook it holds and runs one with
// `hook run ID` (its readiness hook with `hook ready`), with the files and
// environment of any hook (docs/operator.md, "Batch hooks"). One that says
// has_settings_check also answers `hook check` on a module's settings
// (docs/operator.md, "Settings checks").

// BatchReadyID is the ID of a batch executable's readiness hook.
const BatchReadyID = "ready"

// batchVersion is the only `hook config` format version module-sdk
// v0.12.0 prints.
const batchVersion = "v1"

// isExecutableImage: an ELF or Mach-O header. Only such files are asked
// `hook config`; a script never is, so no shell hook's body runs with
// arguments it does not expect (the original asks every executable
// without an extension).
func isExecutableImage(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	switch string(head[:4]) {
	case "\x7fELF",
		"\xfe\xed\xfa\xce", "\xce\xfa\xed\xfe", // Mach-O 32-bit
		"\xfe\xed\xfa\xcf", "\xcf\xfa\xed\xfe", // Mach-O 64-bit
		"\xca\xfe\xba\xbe": // Mach-O universal
		return true
	}
	return false
}

// batchProbe is what asking an executable `hook config` found: the hooks
// it holds, or why it is not a batch executable.
type batchProbe struct {
	hooks    []batchHook
	notBatch string
	// settingsCheck: it answers `hook check` (has_settings_check).
	settingsCheck bool
}

// batchHook is one hook of a batch executable.
type batchHook struct {
	id, name string
	cfg      *HookConfig
}

// batchHooks asks an executable image `hook config`, through the config
// cache. It returns the hooks it holds, or nil and why it is not a batch
// executable; an error is a batch config that is wrong, or the load's end.
func (l *Loader) batchHooks(ctx context.Context, use *cacheUse, h *Hook) ([]*Hook, string, error) {
	cacheKey := "batch\x00" + h.Module + "\x00" + h.Name + "\x00" + h.Hash + "\x00" + h.scope
	c, ok := l.configs.get(use, cacheKey)
	if !ok {
		var err error
		if c, err = l.probeBatch(ctx, h); err != nil {
			return nil, "", err
		}
		l.configs.put(use, cacheKey, c)
	}
	if c.batch.notBatch != "" {
		return nil, c.batch.notBatch, nil
	}
	h.settingsCheck = c.batch.settingsCheck
	hooks := make([]*Hook, 0, len(c.batch.hooks))
	for _, b := range c.batch.hooks {
		sum := sha256.Sum256([]byte(h.Hash + "\x00" + c.hash + "\x00" + b.id))
		bh := *h
		bh.Name, bh.Config, bh.Hash = b.name, b.cfg, hex.EncodeToString(sum[:])
		bh.Args = []string{"hook", "run", b.id}
		if b.id == BatchReadyID {
			bh.Args = []string{"hook", "ready"}
		}
		bh.Env = []string{"MODULE_NAME=" + moduleNameEnv(h)}
		hooks = append(hooks, &bh)
	}
	return hooks, "", nil
}

// moduleNameEnv is MODULE_NAME for a batch hook: the module, or "global",
// as the original sets it.
func moduleNameEnv(h *Hook) string {
	if h.Module == "" {
		return "global"
	}
	return h.Module
}

// probeBatch runs `hook config`, bounded like --config. Only a JSON answer
// in module-sdk's format makes a batch executable; any other answer, an
// exit status or a timeout says it is not one, and it is asked --config.
func (l *Loader) probeBatch(ctx context.Context, h *Hook) (cachedConfig, error) {
	out, err := executor.Run(ctx, executor.Command{
		Path:          h.Path,
		Args:          []string{"hook", "config"},
		Dir:           filepath.Dir(h.Path),
		Env:           []string{"WORKING_DIR=" + h.WorkingDir, "MODULE_NAME=" + moduleNameEnv(h)},
		Timeout:       l.configTimeout,
		CaptureStdout: true,
		OutputLimit:   (l.maxConfig + 1) / 2,
		Logger:        l.logger.With("hook", h.Name, "phase", "batch config"),
	})
	if ctx.Err() != nil {
		return cachedConfig{}, ctx.Err()
	}
	notBatch := func(why string) (cachedConfig, error) {
		return cachedConfig{batch: &batchProbe{notBatch: why}}, nil
	}
	switch {
	case err != nil:
		return notBatch(fmt.Sprintf("`hook config`: %v", err))
	case len(out) > l.maxConfig:
		return notBatch(fmt.Sprintf("`hook config` printed more than %d bytes", l.maxConfig))
	}
	raw, ok := batchConfigOf(out)
	if !ok {
		return notBatch(fmt.Sprintf("`hook config` printed no batch config: %s", preview(out)))
	}
	hooks, check, err := parseBatchConfig(raw, h)
	if err != nil {
		return cachedConfig{}, fmt.Errorf("batch hook config (`hook config`): %w", err)
	}
	sum := sha256.Sum256(out)
	return cachedConfig{batch: &batchProbe{hooks: hooks, settingsCheck: check}, hash: hex.EncodeToString(sum[:])}, nil
}

// batchConfigOf says whether out is a batch config: a JSON object with a
// "version", or a JSON array (module-sdk's older format, which the original
// still reads as hooks 0, 1, …).
func batchConfigOf(out []byte) (json.RawMessage, bool) {
	out = bytes.TrimSpace(out)
	if !json.Valid(out) {
		return nil, false
	}
	switch out[0] {
	case '[':
		return out, true
	case '{':
		var top map[string]json.RawMessage
		if json.Unmarshal(out, &top) != nil {
			return nil, false
		}
		_, ok := top["version"]
		return out, ok
	}
	return nil, false
}

// sdkBatchConfig is module-sdk's BatchHookConfig as `hook config` prints it.
type sdkBatchConfig struct {
	Version   string          `json:"version"`
	Hooks     []sdkHookConfig `json:"hooks"`
	Readiness *sdkHookConfig  `json:"readiness"`
	// HasSettingsCheck says the executable answers `hook check`: the
	// module's settings check, run on a ConfigMap edit of its section
	// (lifecycle/settingscheck.go).
	HasSettingsCheck bool `json:"has_settings_check"`
}

// sdkHookConfig is module-sdk's HookConfig.
type sdkHookConfig struct {
	ConfigVersion string `json:"configVersion"`
	Metadata      struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"metadata"`
	Schedule []struct {
		Name    string `json:"name"`
		Crontab string `json:"crontab"`
		Queue   string `json:"queue"`
	} `json:"schedule"`
	Kubernetes       []sdkKubernetes `json:"kubernetes"`
	OnStartup        *uint           `json:"onStartup"`
	BeforeHelm       *uint           `json:"beforeHelm"`
	AfterHelm        *uint           `json:"afterHelm"`
	BeforeDeleteHelm *uint           `json:"beforeDeleteHelm"`
	AfterDeleteHelm  *uint           `json:"afterDeleteHelm"`
	AllowFailure     *bool           `json:"allowFailure"` // unused, as in the original
	Settings         *struct {
		ExecutionMinInterval time.Duration `json:"executionMinInterval"`
		ExecutionBurst       int           `json:"executionBurst"`
		// EnableSchedulesOnStartup is Deckhouse's; schedules here run
		// from the start anyway.
		EnableSchedulesOnStartup *bool `json:"enableSchedulesOnStartup"`
	} `json:"settings"`
	LogLevel string `json:"logLevel"`
}

// sdkKubernetes is module-sdk's KubernetesConfig.
type sdkKubernetes struct {
	Name              string                `json:"name"`
	APIVersion        string                `json:"apiVersion"`
	Kind              string                `json:"kind"`
	NameSelector      json.RawMessage       `json:"nameSelector,omitempty"`
	NamespaceSelector json.RawMessage       `json:"namespace,omitempty"`
	LabelSelector     *metav1.LabelSelector `json:"labelSelector,omitempty"`
	FieldSelector     json.RawMessage       `json:"fieldSelector,omitempty"`
	// ExecuteHookOnEvents is a boolean in module-sdk: false runs the hook
	// for no event (snapshots only).
	ExecuteHookOnEvents          *bool    `json:"executeHookOnEvent"`
	ExecuteHookOnSynchronization *bool    `json:"executeHookOnSynchronization"`
	WaitForSynchronization       *bool    `json:"waitForSynchronization"`
	KeepFullObjectsInMemory      *bool    `json:"keepFullObjectsInMemory"`
	JqFilter                     string   `json:"jqFilter"`
	AllowFailure                 *bool    `json:"allowFailure"`
	ResynchronizationPeriod      string   `json:"resynchronizationPeriod"`
	IncludeSnapshotsFrom         []string `json:"includeSnapshotsFrom"`
	Queue                        string   `json:"queue"`
}

// parseBatchConfig reads a batch config into its hooks: hook i is named
// `<file>:<metadata.name>:<i>` and runs with `hook run i`; the readiness
// hook is `<file>-readiness` and runs with `hook ready` (the original's
// names, so metrics and logs keep their labels). check says the executable
// answers `hook check`.
func parseBatchConfig(raw json.RawMessage, h *Hook) ([]batchHook, bool, error) {
	var bc sdkBatchConfig
	if raw[0] == '[' {
		if err := decodeStrict(raw, &bc.Hooks); err != nil {
			return nil, false, fmt.Errorf("want a list of hook configs: %w", err)
		}
	} else {
		if err := decodeStrict(raw, &bc); err != nil {
			return nil, false, fmt.Errorf("want {version, hooks, readiness}: %w", err)
		}
		if bc.Version != batchVersion {
			return nil, false, fmt.Errorf("version %q: want %q (module-sdk's format)", bc.Version, batchVersion)
		}
	}
	global := h.Module == ""
	var out []batchHook
	for i := range bc.Hooks {
		id := strconv.Itoa(i)
		cfg, err := bc.Hooks[i].hookConfig(global)
		if err != nil {
			return nil, false, fmt.Errorf("hook %s (%s): %w", id, bc.Hooks[i].Metadata.Name, err)
		}
		out = append(out, batchHook{id: id, name: h.Name + ":" + bc.Hooks[i].Metadata.Name + ":" + id, cfg: cfg})
	}
	if bc.Readiness != nil {
		cfg, err := bc.Readiness.hookConfig(global)
		if err != nil {
			return nil, false, fmt.Errorf("readiness: %w", err)
		}
		out = append(out, batchHook{id: BatchReadyID, name: h.Name + "-readiness", cfg: cfg})
	}
	return out, bc.HasSettingsCheck, nil
}

// hookConfig turns a module-sdk hook config into a v1 hook config with the
// original's defaults for batch hooks, and parses it as any v1 config. As
// in the original, every binding is in group "main" (a run sees the
// snapshots of all the hook's kubernetes bindings), objects are not kept
// whole unless asked, and a global hook's beforeHelm and afterHelm are its
// beforeAll and afterAll (its delete bindings are ignored).
func (c *sdkHookConfig) hookConfig(global bool) (*HookConfig, error) {
	v1 := map[string]any{"configVersion": "v1"}
	orders := map[string]*uint{OnStartup: c.OnStartup, BeforeHelm: c.BeforeHelm, AfterHelm: c.AfterHelm,
		BeforeDeleteHelm: c.BeforeDeleteHelm, AfterDeleteHelm: c.AfterDeleteHelm}
	if global {
		orders = map[string]*uint{OnStartup: c.OnStartup, BeforeAll: c.BeforeHelm, AfterAll: c.AfterHelm}
	}
	for k, o := range orders {
		if o != nil {
			v1[k] = *o
		}
	}
	if len(c.Schedule) > 0 {
		var s []map[string]any
		for _, e := range c.Schedule {
			s = append(s, map[string]any{"name": e.Name, "crontab": e.Crontab, "queue": e.Queue, "group": "main"})
		}
		v1[Schedule] = s
	}
	if len(c.Kubernetes) > 0 {
		var ks []map[string]any
		for _, k := range c.Kubernetes {
			ks = append(ks, k.v1())
		}
		v1[Kubernetes] = ks
	}
	if s := c.Settings; s != nil {
		if s.ExecutionMinInterval < 0 || s.ExecutionBurst < 0 {
			return nil, errors.New("settings: executionMinInterval and executionBurst must not be negative")
		}
		v1["settings"] = map[string]any{"executionMinInterval": s.ExecutionMinInterval.String(), "executionBurst": s.ExecutionBurst}
	}
	b, err := json.Marshal(v1)
	if err != nil {
		return nil, err
	}
	return ParseHookConfig(b, global)
}

// v1 is the kubernetes binding in v1's fields.
func (k *sdkKubernetes) v1() map[string]any {
	or := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	m := map[string]any{
		"name": k.Name, "apiVersion": k.APIVersion, "kind": k.Kind, "jqFilter": k.JqFilter,
		"executeHookOnSynchronization": or(k.ExecuteHookOnSynchronization, true),
		"waitForSynchronization":       or(k.WaitForSynchronization, true),
		"keepFullObjectsInMemory":      or(k.KeepFullObjectsInMemory, false),
		"allowFailure":                 or(k.AllowFailure, false),
		"queue":                        k.Queue, "group": "main",
		"resynchronizationPeriod": k.ResynchronizationPeriod,
		"includeSnapshotsFrom":    k.IncludeSnapshotsFrom,
	}
	if k.ExecuteHookOnEvents != nil && !*k.ExecuteHookOnEvents {
		m["executeHookOnEvent"] = []string{}
	}
	for key, raw := range map[string]json.RawMessage{"nameSelector": k.NameSelector, "namespace": k.NamespaceSelector, "fieldSelector": k.FieldSelector} {
		if len(raw) > 0 && string(raw) != "null" {
			m[key] = raw
		}
	}
	if k.LabelSelector != nil {
		m["labelSelector"] = k.LabelSelector
	}
	return m
}
