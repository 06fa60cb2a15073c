package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	chartloader "helm.sh/helm/v3/pkg/chart/loader"
)

// maxCachedCharts bounds the chart cache.
const maxCachedCharts = 1000

// chartCache keeps the charts Helm loaded, by ChartDir and ChartHash.
type chartCache struct {
	mu     sync.Mutex
	charts map[string]*chart.Chart
}

// load loads (and caches) a module's chart. A module with templates/ and
// no Chart.yaml gets one made up from its name. Each caller gets its own
// copy: Helm's install and upgrade edit the chart they are given (they drop
// disabled subcharts, rename aliased ones).
func (cc *chartCache) load(r Release) (*chart.Chart, error) {
	key := r.ChartDir + "\x00" + r.ChartHash
	cc.mu.Lock()
	c, ok := cc.charts[key]
	cc.mu.Unlock()
	if ok && r.ChartHash != "" {
		return copyChart(c), nil
	}
	c, err := loadChart(r)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if len(cc.charts) >= maxCachedCharts {
		clear(cc.charts) // charts of old trees go; the current ones reload once
	}
	cc.charts[key] = c
	cc.mu.Unlock()
	return copyChart(c), nil
}

// copyChart copies what Helm edits while it processes dependencies: the
// metadata's dependency list and the subcharts, recursively; templates,
// files and values are shared (Helm replaces them rather than editing).
func copyChart(c *chart.Chart) *chart.Chart {
	out := *c
	md := *c.Metadata
	if c.Metadata.Dependencies != nil {
		md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			if d != nil {
				dep := *d
				md.Dependencies[i] = &dep
			}
		}
	}
	out.Metadata = &md
	subs := c.Dependencies()
	copies := make([]*chart.Chart, len(subs))
	for i, sub := range subs {
		copies[i] = copyChart(sub)
	}
	out.SetDependencies(copies...)
	return &out
}

func loadChart(r Release) (*chart.Chart, error) {
	var c *chart.Chart
	var err error
	if r.Files != nil {
		c, err = loadChartFS(r.Files, r.Name)
	} else if _, statErr := os.Stat(filepath.Join(r.ChartDir, "Chart.yaml")); statErr == nil {
		c, err = chartloader.LoadDir(r.ChartDir)
	} else {
		c, err = loadTemplatesOnly(r.ChartDir, r.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", r.ChartDir, err)
	}
	if len(r.Exclude) > 0 {
		c.Files = slices.DeleteFunc(slices.Clone(c.Files), func(f *chart.File) bool { return slices.Contains(r.Exclude, f.Name) })
	}
	// The module directory is the chart, so its values.yaml holds Helm's
	// defaults for subcharts and keys outside the module's section. The
	// module's section and "global" are left out: the operator hands Helm
	// them complete, and defaults would bring back keys a hook's patch
	// removed (docs/operator.md, "Helm releases").
	c.Values = maps.Clone(c.Values)
	delete(c.Values, "global")
	if r.Key != "" {
		delete(c.Values, r.Key)
	}
	if c.Values == nil {
		c.Values = map[string]any{}
	}
	return c, nil
}

func loadTemplatesOnly(dir, name string) (*chart.Chart, error) {
	files := []*chartloader.BufferedFile{{
		Name: "Chart.yaml",
		Data: fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: 0.0.1\n", name),
	}}
	if data, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		files = append(files, &chartloader.BufferedFile{Name: "values.yaml", Data: data})
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, sub := range []string{"templates", "charts", "crds"} {
		root := filepath.Join(dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files = append(files, &chartloader.BufferedFile{Name: filepath.ToSlash(rel), Data: data})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return chartloader.LoadFiles(files)
}

// checksum renders the chart with the values (client-side) and digests the
// rendered manifests (hooks included). The values themselves are left out:
// every chart gets the global values, so a change to a value no template
// uses would otherwise upgrade every release without changing anything.
func checksum(ctx context.Context, c *chart.Chart, r Release, namespace string) (string, error) {
	manifest, err := render(ctx, c, r, namespace)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(manifest))
	// a label value holds 63 characters
	return hex.EncodeToString(sum[:])[:40], nil
}

// Render renders a module's chart with the values without a cluster: the
// manifests, then each Helm hook's, as Helm would apply them.
func Render(ctx context.Context, r Release, namespace string) (string, error) {
	c, err := loadChart(r)
	if err != nil {
		return "", err
	}
	return render(ctx, c, r, namespace)
}

func render(ctx context.Context, c *chart.Chart, r Release, namespace string) (string, error) {
	// ClientOnly replaces the configuration's kube client and release
	// storage with fakes, so rendering gets a configuration of its own.
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = r.Name, namespace
	inst.IncludeCRDs = true
	rel, err := inst.RunWithContext(ctx, c, r.Values)
	if err != nil {
		return "", fmt.Errorf("render chart of %s: %w", r.Name, err)
	}
	var b strings.Builder
	b.WriteString(rel.Manifest)
	for _, hk := range rel.Hooks {
		fmt.Fprintf(&b, "\n---\n# Source: %s\n%s", hk.Path, hk.Manifest)
	}
	return b.String(), nil
}
