package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// A module-sdk batch executable that prints has_settings_check answers
// `hook check`: it reads the module's settings from the JSON file at
// $SETTINGS_PATH, exits 0 without a word when it accepts them, and
// otherwise prints one JSON line {valid, message, warnings} on stderr and
// exits 1 (valid with warnings exits 1 too). A ConfigMap edit of the
// module's section runs it before anything else takes the edit; a refusal
// refuses the edit as a schema does (docs/operator.md, "Settings checks").

// settingsCheckTimeout bounds one `hook check`, as --config's default
// bounds a hook's config: the check answers from the settings alone.
const settingsCheckTimeout = 30 * time.Second

// settingsRefusal is a module's settings check refusing its section.
type settingsRefusal struct {
	module, check, message string
}

func (e *settingsRefusal) Error() string {
	return fmt.Sprintf("module %s: its settings check (%s hook check) refuses its section: %s", e.module, e.check, e.message)
}

// sdkCheckResult is what module-sdk's settings check prints on stderr.
type sdkCheckResult struct {
	Valid    *bool    `json:"valid"`
	Message  string   `json:"message"`
	Warnings []string `json:"warnings"`
}

// settingsChecks runs the modules' settings checks on ConfigMap edits.
// The checks run in the ConfigMap watch's callback (onConfigChange), one
// module after the other, each for at most settingsCheckTimeout: the
// events that follow wait meanwhile, and the newest data is judged next
// (docs/operator.md, "Settings checks").
type settingsChecks struct {
	cfg    Config
	logger *slog.Logger
	trees  *runstate.Trees
	// check runs one module's check (checkModule; tests replace it)
	check func(ctx context.Context, m *loader.Module, section string) error
}

func newSettingsChecks(cfg Config, logger *slog.Logger, trees *runstate.Trees) *settingsChecks {
	c := &settingsChecks{cfg: cfg, logger: logger, trees: trees}
	c.check = c.checkModule
	return c
}

// set is a ConfigMap edit's way in: the settings checks of the modules
// whose section it changes run against the running tree, then the data is
// set (runstate.Trees.SetConfig), unless a new tree was adopted in between,
// when the checks run again against it, until a tree stays while its
// checks run: each pass follows an adoption, so this ends once the trees
// stop coming, and on cancel. Refusing the edit instead would leave the
// ConfigMap and the running values apart until the next edit. It returns
// the effective data and the model from before the edit, and what setConfig
// returned.
func (c *settingsChecks) set(ctx context.Context, data map[string]string, version string) (before map[string]string, model *loader.Model, ch values.Change, ok bool, err error) {
	for {
		t := c.trees.Load()
		if t == nil {
			return nil, nil, values.Change{}, false, nil
		}
		before, model = t.ConfigData, t.Model
		if !runstate.NewerVersion(version, t.ConfigVersion) {
			return before, model, values.Change{}, false, nil
		}
		// the checks judge the settings that would run: the config in
		// git laid over the edit (docs/operator.md, "Config in git")
		eff, _, err := runstate.Effective(model, data)
		if err != nil {
			return before, model, values.Change{}, false, err
		}
		if err := c.checkAll(ctx, t, eff); err != nil {
			return before, model, values.Change{}, false, err
		}
		ch, ok, err = c.trees.SetConfig(data, version, model)
		if !errors.Is(err, runstate.ErrTreeMoved) {
			return before, model, ch, ok, err
		}
		if ctx.Err() != nil {
			return before, model, values.Change{}, false, ctx.Err()
		}
		c.logger.Info("a new tree was adopted while the ConfigMap's settings were checked; checking them again")
	}
}

// checkAll runs the settings check of every module of t's model whose
// ConfigMap section differs between t's data and data (every module's,
// when t has none) and is validated when data is set (values.Sections):
// a disabled module's section refuses nothing (docs/operator.md,
// "Values"). It joins the refusals.
func (c *settingsChecks) checkAll(ctx context.Context, t *runstate.Tree, data map[string]string) error {
	checked := t.Store.Sections().Checked(data)
	var errs []error
	for _, m := range t.Model.Modules {
		if m.SettingsCheck == "" || !slices.Contains(checked, m.Key) {
			continue
		}
		if t.ConfigData != nil && t.ConfigData[m.Key] == data[m.Key] {
			continue
		}
		if err := c.check(ctx, m, data[m.Key]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkModule runs m's settings check on its section, the YAML
// text of its ConfigMap key. The settings are the section as the ConfigMap
// gives it (CONFIG_VALUES_PATH's), {} when it has none. A section that
// does not parse, or is not a map (`false` disables the module), is left
// to the schemas, which refuse it in their own words. A check that does
// not answer (a timeout, an exit without its JSON line) refuses too: an
// edit nobody could check is not applied.
func (c *settingsChecks) checkModule(ctx context.Context, m *loader.Module, section string) error {
	settings, ok := settingsOf(section)
	if !ok {
		return nil
	}
	name := m.SettingsCheck
	if rel, err := filepath.Rel(filepath.Dir(m.Dir), m.SettingsCheck); err == nil {
		name = filepath.ToSlash(rel)
	}
	dir, err := os.MkdirTemp(c.cfg.TempDir, "addon-operator-check-")
	if err != nil {
		return fmt.Errorf("settings check temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, settings, 0o600); err != nil {
		return fmt.Errorf("settings check: %w", err)
	}
	logger := c.logger.With("module", m.Name, "hook", name, "phase", "settings check")
	_, err = executor.Run(ctx, executor.Command{
		Path:    m.SettingsCheck,
		Args:    []string{"hook", "check"},
		Dir:     filepath.Dir(m.SettingsCheck),
		Env:     []string{"SETTINGS_PATH=" + path, "MODULE_NAME=" + m.Name},
		Timeout: settingsCheckTimeout,
		Logger:  logger,
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	he := hookrun.NewHookError("module "+m.Name+": settings check ("+name+" hook check)", err)
	res, ok := checkResultOf(he.HookOutput())
	switch {
	case !ok:
		return fmt.Errorf("%w (no answer to read: the edit is refused)", he)
	case *res.Valid:
		for _, w := range res.Warnings {
			logger.Warn("settings check warning", "warning", w)
		}
		return nil
	}
	return &settingsRefusal{module: m.Name, check: name, message: hookrun.StatusLine(res.Message)}
}

// settingsOf is the JSON the check reads for a section; false when the
// section is left to the schemas.
func settingsOf(section string) ([]byte, bool) {
	js, err := yaml.YAMLToJSON([]byte(section))
	if err != nil {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, false
	}
	switch v.(type) {
	case nil:
		return []byte("{}"), true
	case map[string]any:
		return js, true
	}
	return nil, false
}

// checkResultOf reads the last line of the check's stderr as its result.
func checkResultOf(stderr string) (sdkCheckResult, bool) {
	var res sdkCheckResult
	if !hookrun.LastLineJSON(stderr, &res) || res.Valid == nil {
		return sdkCheckResult{}, false
	}
	return res, true
}
