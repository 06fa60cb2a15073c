package loader

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/values"
)

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
	if mod.Values, err = readValues(d, "values.yaml", key); err != nil {
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
	for _, hook := range mod.Hooks {
		hook.scope = mod.Hash
	}
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
		e, err := followOut(modules.path(de.Name()), de.Name())
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
	mod.EnabledScript, err = d.execPath("enabled", info)
	return err
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
		if mod.HealthWait, err = readHealthWait(d); err != nil {
			return err
		}
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
