package preview

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/loader"
)

// chart is module dir's chart, one ConfigMap showing the values of key.
func chart(dir, name, key string) map[string]string {
	return map[string]string{
		"modules/" + dir + "/Chart.yaml":               fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name),
		"modules/" + dir + "/templates/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-values\ndata:\n  values: {{ toJson .Values.%s | quote }}\n", name, key),
	}
}

func merged(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// renderTree renders root's modules and global-hooks directories.
func renderTree(t *testing.T, ld *loader.Loader, root string, config map[string]string, execHooks bool) (*Preview, error) {
	t.Helper()
	return Render(t.Context(), Options{Loader: ld, Root: root, ModulesDir: filepath.Join(root, "modules"), GlobalHooksDir: filepath.Join(root, "global-hooks"),
		Config: config, Namespace: "ns", ExecHooks: execHooks, Logger: quiet()})
}
