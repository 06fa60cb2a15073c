package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/preview"
)

// What render and diff print: every module's result, the failing ones
// reported without stopping the others (docs/operator.md, "Command line").

// failuresErr reports a preview's failed modules on errOut, one line each,
// and is the error the command exits with; nil when none failed.
func failuresErr(errOut io.Writer, side string, fails []preview.Failure) error {
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
	p, err := po.render(ctx, ref, po.ShowSecrets)
	if err != nil {
		return err
	}
	if output == "json" {
		res := struct {
			Enabled      []string                 `json:"enabled"`
			NotEvaluated []string                 `json:"notEvaluated,omitempty"`
			ConfigFiles  []string                 `json:"configFiles,omitempty"`
			ConfigDrift  []clusterconfig.Override `json:"configDrift,omitempty"`
			Modules      []preview.Module         `json:"modules"`
		}{p.Enabled, p.NotEvaluated, p.ConfigFiles, p.Overrides, p.Modules()}
		if _, err := writeData(out, output, res); err != nil {
			return err
		}
		return failuresErr(errOut, "", p.Failures)
	}
	fmt.Fprintf(out, "# enabled modules: %s\n", strings.Join(p.Enabled, ", "))
	notEvaluated(out, p)
	clusterConfig(out, p)
	for _, name := range p.Enabled {
		if m, ok := p.Manifests[name]; ok {
			fmt.Fprintf(out, "---\n# module: %s\n%s\n", name, strings.TrimSpace(m))
		}
	}
	return failuresErr(errOut, "", p.Failures)
}

// clusterConfig says which config files in git a preview read, and which
// --values keys they replace (config drift: not applied).
func clusterConfig(out io.Writer, p *preview.Preview) {
	if len(p.ConfigFiles) > 0 {
		fmt.Fprintf(out, "# cluster config: %s\n", strings.Join(p.ConfigFiles, ", "))
	}
	for _, o := range p.Overrides {
		fmt.Fprintf(out, "# config drift: %s is set by %s; the --values value is not applied\n", o, o.File)
	}
}

// diffModule is one module's result in `diff -o json`.
type diffModule struct {
	Name   string `json:"name"`
	Change string `json:"change"` // added, removed, changed, unchanged, failed
	Diff   string `json:"diff,omitempty"`
	// Failures: the sides on which it failed to render
	Failures []preview.SideFailure `json:"failures,omitempty"`
}

func diff(out, errOut io.Writer, po *previewOptions, from, to, output string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	before, err := po.render(ctx, from, true)
	if err != nil {
		return fmt.Errorf("--from %s: %w", from, err)
	}
	after, err := po.render(ctx, to, true)
	if err != nil {
		return fmt.Errorf("--to %s: %w", to, err)
	}
	toName := to
	if toName == "" {
		toName = "working copy"
	}
	sum, err := preview.Compare(before, after, from, toName, po.ShowSecrets)
	if err != nil {
		return err
	}
	failed, change, names, diffs := sum.Failed, sum.Change, sum.Names, sum.Diffs
	added, removed, changed := sum.Added, sum.Removed, sum.Changed
	var failErr error
	if len(failed) > 0 {
		for _, side := range []struct {
			name string
			p    *preview.Preview
		}{{"--from " + from, before}, {"--to " + toName, after}} {
			for _, f := range side.p.Failures {
				fmt.Fprintf(errOut, "%s: module %s: %s: %s\n", side.name, f.Module, f.File, f.Error)
			}
		}
		fl := sum.FailedModules()
		failErr = fmt.Errorf("%d module(s) failed to render: %s", len(fl), strings.Join(fl, ", "))
	}
	if output == "json" {
		res := struct {
			From    string       `json:"from"`
			To      string       `json:"to"`
			Modules []diffModule `json:"modules"`
			// ConfigDrift: the --values keys the to side's config in git
			// replaces (the operator reports them, never applies them)
			ConfigDrift []clusterconfig.Override `json:"configDrift,omitempty"`
		}{From: from, To: toName, ConfigDrift: after.Overrides}
		for _, m := range names {
			res.Modules = append(res.Modules, diffModule{Name: m, Change: change[m], Diff: diffs[m], Failures: failed[m]})
		}
		if _, err := writeData(out, output, res); err != nil {
			return err
		}
	} else {
		notEvaluated(out, before)
		notEvaluated(out, after)
		clusterConfig(out, after)
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
		for _, m := range sum.Differing() {
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
