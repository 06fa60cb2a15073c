package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The shape of the original addon-operator's module examples (its 101 and
// 201): a module without schemas whose values.yaml holds its section (keys
// with dots in them) and its Enabled flag, a ConfigMap with an empty
// global section and the module's section on top, a DaemonSet rendered
// from a range over the merged values, and a hook on every Helm binding
// that only reads its binding. It converges, takes ConfigMap edits and is
// deleted with its afterDeleteHelm hook. Our own tree, written for this test.
func TestOriginalModuleShape(t *testing.T) {
	ns := namespace(t, "original-shape")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"modules/001-kernel-tuner/values.yaml": "kernelTuner:\n  params:\n    vm.swappiness: 0\n    net.core.somaxconn: 1000\n  interval: 600\nkernelTunerEnabled: true\n",
		"modules/001-kernel-tuner/templates/daemon-set.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kernel-tuner
spec:
  selector:
    matchLabels: {app: kernel-tuner}
  template:
    metadata:
      labels: {app: kernel-tuner}
    spec:
      containers:
        - name: tuner
          image: busybox
          command:
            - sh
            - -c
            - |
              while true; do
              {{- range $k, $v := .Values.kernelTuner.params }}
                sysctl -w {{ $k }}={{ $v }}
              {{- end }}
                sleep {{ .Values.kernelTuner.interval }}
              done
`,
		"modules/001-kernel-tuner/hooks/module-hooks.sh": `#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","beforeHelm":1,"afterHelm":1,"afterDeleteHelm":1}'
  exit 0
fi
echo "hook ran for binding $(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")"
`,
		"global-hooks/.keep": "",
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{
		"global":      "",
		"kernelTuner": "params:\n  vm.swappiness: \"10\"\ninterval: \"300\"\n",
	}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	op := runOperator(t, addr, []string{"start"}, []string{"KUBECONFIG=" + cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE=" + ns,
		"ADDON_OPERATOR_LISTEN_ADDRESS=" + addr, "MODULES_DIR=" + filepath.Join(dir, "modules"), "GLOBAL_HOOKS_DIR=" + filepath.Join(dir, "global-hooks")})
	script := func() string {
		ds, err := client.AppsV1().DaemonSets(ns).Get(context.Background(), "kernel-tuner", metav1.GetOptions{})
		if err != nil || len(ds.Spec.Template.Spec.Containers) == 0 {
			return ""
		}
		c := ds.Spec.Template.Spec.Containers[0].Command
		return c[len(c)-1]
	}
	eventually(t, "the DaemonSet from the merged values", func() bool {
		s := script()
		return strings.Contains(s, "sysctl -w vm.swappiness=10") && strings.Contains(s, "sysctl -w net.core.somaxconn=1000") && strings.Contains(s, "sleep 300")
	})

	cm.Data["kernelTuner"] = "params:\n  vm.swappiness: \"20\"\n"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit applied", func() bool {
		s := script()
		return strings.Contains(s, "vm.swappiness=20") && strings.Contains(s, "sleep 600")
	})

	cm.Data["kernelTunerEnabled"] = "false"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the module deleted", func() bool { return script() == "" })
	eventually(t, "afterDeleteHelm ran", func() bool {
		log, _ := os.ReadFile(op.log)
		return strings.Contains(string(log), "hook ran for binding afterDeleteHelm")
	})
}

// The shape of the original's 202 example without git: MODULES_DIR lists
// two directories, and the second reaches its module through a symlink
// into a third directory that is not listed.
func TestOriginalSymlinkShape(t *testing.T) {
	ns := namespace(t, "original-links")
	dir := t.TempDir()
	writeFiles(t, dir, merged(
		under("module_dir_1", moduleFiles("001-backend", "backend", "b")),
		under("module_storage", moduleFiles("002-frontend", "frontend", "f")),
		map[string]string{
			"module_dir_1/values.yaml": "backendEnabled: true\n",
			"module_dir_2/values.yaml": "frontendEnabled: true\n",
			"global-hooks/.keep":       "",
		}))
	if err := os.Symlink("../module_storage/002-frontend", filepath.Join(dir, "module_dir_2/002-frontend")); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	runOperator(t, addr, []string{"start"}, []string{"KUBECONFIG=" + cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE=" + ns,
		"ADDON_OPERATOR_LISTEN_ADDRESS=" + addr,
		"ADDON_OPERATOR_MODULES_DIR=" + filepath.Join(dir, "module_dir_1") + ":" + filepath.Join(dir, "module_dir_2"),
		"GLOBAL_HOOKS_DIR=" + filepath.Join(dir, "global-hooks")})
	eventually(t, "both modules installed", func() bool {
		return cmValue(ns, "001-backend-cm") == "b" && cmValue(ns, "002-frontend-cm") == "f"
	})
}
