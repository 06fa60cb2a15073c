package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/addonops/addon-operator/lifecycle"
)

// What render and diff print: every module's result, the failing ones
// reported without stopping the others (docs/operator.md, "Command line").

// previewModule is one module's result in `render -o json`.
type previewModule struct {
	Name     string `json:"name"`
	Manifest string `json:"manifest,omitempty"`
	File     string `json:"file,omitempty"`
	Error    string `json:"error,omitempty"`
}

// modulesOf lists p's modules in run order, each rendered or failed.
func modulesOf(p *lifecycle.Preview) []previewModule {
	failed := map[string]lifecycle.PreviewFailure{}
	var out []previewModule
	for _, f := range p.Failures {
		failed[f.Module] = f
		if !slices.Contains(p.Enabled, f.Module) { // an enabled script that failed
			out = append(out, previewModule{Name: f.Module, File: f.File, Error: f.Error})
		}
	}
	for _, name := range p.Enabled {
		if f, ok := failed[name]; ok {
			out = append(out, previewModule{Name: name, File: f.File, Error: f.Error})
		} else if m, ok := p.Manifests[name]; ok {
			out = append(out, previewModule{Name: name, Manifest: m})
		}
	}
	return out
}

// failuresErr reports a preview's failed modules on errOut, one line each,
// and is the error the command exits with; nil when none failed.
func failuresErr(errOut io.Writer, side string, fails []lifecycle.PreviewFailure) error {
	if len(fails) == 0 {
		return nil
	}
	var names []string
	for _, f := range fails {
		fmt.Fprintf(errOut, "%smodule %s: %s: %s\n", side, f.Module, f.File, f.Error)
		names = append(names, f.Module)
	}
	return fmt.Errorf("%s%d module(s) failed to render: %s", side, len(fails), strings.Join(names, ", "))
}

func render(out, errOut io.Writer, po *previewOptions, ref, output string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, err := po.render(ctx, ref)
	if err != nil {
		return err
	}
	if output == "json" {
		res := struct {
			Enabled      []string        `json:"enabled"`
			NotEvaluated []string        `json:"notEvaluated,omitempty"`
			Modules      []previewModule `json:"modules"`
		}{p.Enabled, p.NotEvaluated, modulesOf(p)}
		if _, err := writeData(out, output, res); err != nil {
			return err
		}
		return failuresErr(errOut, "", p.Failures)
	}
	fmt.Fprintf(out, "# enabled modules: %s\n", strings.Join(p.Enabled, ", "))
	notEvaluated(out, p)
	for _, name := range p.Enabled {
		if m, ok := p.Manifests[name]; ok {
			fmt.Fprintf(out, "---\n# module: %s\n%s\n", name, strings.TrimSpace(m))
		}
	}
	return failuresErr(errOut, "", p.Failures)
}

// diffModule is one module's result in `diff -o json`.
type diffModule struct {
	Name   string `json:"name"`
	Change string `json:"change"` // added, removed, changed, unchanged, failed
	Diff   string `json:"diff,omitempty"`
	// Failures: the sides on which it failed to render
	Failures []diffFailure `json:"failures,omitempty"`
}

type diffFailure struct {
	Side  string `json:"side"` // from or to
	File  string `json:"file"`
	Error string `json:"error"`
}

func diff(out, errOut io.Writer, po *previewOptions, from, to, output string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	before, err := po.render(ctx, from)
	if err != nil {
		return fmt.Errorf("--from %s: %w", from, err)
	}
	after, err := po.render(ctx, to)
	if err != nil {
		return fmt.Errorf("--to %s: %w", to, err)
	}
	toName := to
	if toName == "" {
		toName = "working copy"
	}
	sum := compareSides(before, after)
	failed, change, names := sum.failed, sum.change, sum.names
	added, removed, changed := sum.added, sum.removed, sum.changed
	diffs := map[string]string{}
	for _, m := range append(append(slices.Clone(added), removed...), changed...) {
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(before.Manifests[m]), B: difflib.SplitLines(after.Manifests[m]),
			FromFile: m + "@" + from, ToFile: m + "@" + toName, Context: 3,
		})
		if err != nil {
			return err
		}
		diffs[m] = text
	}
	var failErr error
	if len(failed) > 0 {
		var fl []string
		for _, side := range []struct {
			name string
			p    *lifecycle.Preview
		}{{"--from " + from, before}, {"--to " + toName, after}} {
			for _, f := range side.p.Failures {
				fmt.Fprintf(errOut, "%s: module %s: %s: %s\n", side.name, f.Module, f.File, f.Error)
			}
		}
		for _, m := range names {
			if failed[m] != nil {
				fl = append(fl, m)
			}
		}
		failErr = fmt.Errorf("%d module(s) failed to render: %s", len(fl), strings.Join(fl, ", "))
	}
	if output == "json" {
		res := struct {
			From    string       `json:"from"`
			To      string       `json:"to"`
			Modules []diffModule `json:"modules"`
		}{From: from, To: toName}
		for _, m := range names {
			res.Modules = append(res.Modules, diffModule{Name: m, Change: change[m], Diff: diffs[m], Failures: failed[m]})
		}
		if _, err := writeData(out, output, res); err != nil {
			return err
		}
	} else {
		notEvaluated(out, before)
		notEvaluated(out, after)
		if len(added)+len(removed)+len(changed) == 0 && failErr == nil {
			fmt.Fprintf(out, "no differences between %s and %s\n", from, toName)
			return nil
		}
		for _, l := range []struct {
			what  string
			names []string
		}{{"added", added}, {"removed", removed}, {"changed", changed}} {
			if len(l.names) > 0 {
				fmt.Fprintf(out, "%s: %s\n", l.what, strings.Join(l.names, ", "))
			}
		}
		for _, m := range append(append(slices.Clone(added), removed...), changed...) {
			fmt.Fprint(out, diffs[m])
		}
	}
	if failErr != nil {
		return failErr
	}
	if len(added)+len(removed)+len(changed) == 0 {
		return nil
	}
	return errDiffFound
}

// diffSummary is how two previews compare, module by module.
type diffSummary struct {
	// names: the modules of both sides, in order: after's enabled, then
	// before's removed, then the failed ones neither enabled
	names                   []string
	change                  map[string]string        // by module: added, removed, changed, unchanged, failed
	failed                  map[string][]diffFailure // by module, the sides it failed on
	added, removed, changed []string
}

func compareSides(before, after *lifecycle.Preview) diffSummary {
	failed := map[string][]diffFailure{}
	for _, side := range []struct {
		name string
		p    *lifecycle.Preview
	}{{"from", before}, {"to", after}} {
		for _, f := range side.p.Failures {
			failed[f.Module] = append(failed[f.Module], diffFailure{Side: side.name, File: f.File, Error: f.Error})
		}
	}
	var added, removed, changed, names []string
	change := map[string]string{}
	for _, m := range after.Enabled {
		names = append(names, m)
		switch {
		case failed[m] != nil:
			change[m] = "failed"
		case !slices.Contains(before.Enabled, m):
			added, change[m] = append(added, m), "added"
		case before.Manifests[m] != after.Manifests[m]:
			changed, change[m] = append(changed, m), "changed"
		default:
			change[m] = "unchanged"
		}
	}
	for _, m := range before.Enabled {
		if slices.Contains(after.Enabled, m) {
			continue
		}
		names = append(names, m)
		if failed[m] != nil {
			change[m] = "failed"
		} else {
			removed, change[m] = append(removed, m), "removed"
		}
	}
	// a module enabled on neither side whose enabled script failed: in
	// the failures' (run) order, the same from one run to the next
	for _, side := range []*lifecycle.Preview{after, before} {
		for _, f := range side.Failures {
			if _, ok := change[f.Module]; !ok {
				names, change[f.Module] = append(names, f.Module), "failed"
			}
		}
	}
	return diffSummary{names: names, change: change, failed: failed, added: added, removed: removed, changed: changed}
}
