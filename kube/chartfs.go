package kube

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	chartloader "helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"
)

// loadChartFS loads a chart from fsys (Release.Files) as Helm's LoadDir
// loads a directory: every file but those .helmignore and Helm's defaults
// leave out; with no Chart.yaml, one made up from the name and only
// values.yaml, templates/, charts/ and crds/, as loadTemplatesOnly does.
func loadChartFS(fsys fs.FS, name string) (*chart.Chart, error) {
	rules := ignore.Empty()
	if b, err := fs.ReadFile(fsys, ignore.HelmIgnore); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, err
		}
	}
	rules.AddDefaults()
	_, err := fs.Stat(fsys, "Chart.yaml")
	madeUp := err != nil
	var files []*chartloader.BufferedFile
	if madeUp {
		files = append(files, &chartloader.BufferedFile{Name: "Chart.yaml", Data: fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: 0.0.1\n", name)})
	}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if madeUp && p != "values.yaml" && !strings.HasPrefix(p+"/", "templates/") && !strings.HasPrefix(p+"/", "charts/") && !strings.HasPrefix(p+"/", "crds/") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !madeUp && rules.Ignore(p, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, &chartloader.BufferedFile{Name: path.Clean(p), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return chartloader.LoadFiles(files)
}
