package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The examples/ repository that users copy converges, and the changes its
// README suggests work.
func TestExamples(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, map[string]string{}, nil)
	abs, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	e.dir = abs
	e.start()
	e.waitReady()
	ctx := context.Background()
	var dep *appsv1.Deployment
	if dep, err = client.AppsV1().Deployments(e.ns).Get(ctx, "echo-server", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Args[0]; got != "-text=hello from demo.cluster.local" {
		t.Fatalf("echo-server args = %q", got)
	}
	// a namespace labelled for echo-server reaches the chart through clients.sh
	client1 := e.ns + "-client"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: client1, Labels: map[string]string{"echo-server/client": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the client namespace in the chart", func() bool {
		dep, err := client.AppsV1().Deployments(e.ns).Get(ctx, "echo-server", metav1.GetOptions{})
		// other runs against this control plane may have left theirs
		return err == nil && slices.Contains(strings.Split(dep.Annotations["echo-server/clients"], ","), client1)
	})
	if _, err := client.CoreV1().ConfigMaps(e.ns).Get(ctx, "feature-flags", metav1.GetOptions{}); err != nil {
		t.Fatalf("feature-flags (enabled by its script): %v", err)
	}
	if e.hasRelease("debug-tools") {
		t.Fatal("debug-tools is off by default")
	}
	e.setConfigMap(map[string]string{"debugToolsEnabled": "true", "echoServer": "greeting: hi\n"})
	e.eventually("debug-tools installed", func() bool { return e.hasRelease("debug-tools") })
	e.idle()
	dep, _ = client.AppsV1().Deployments(e.ns).Get(ctx, "echo-server", metav1.GetOptions{})
	if got := dep.Spec.Template.Spec.Containers[0].Args[0]; got != "-text=hi from demo.cluster.local" {
		t.Fatalf("echo-server args after the change = %q", got)
	}
	// replicas: 99 breaks the schema (maximum 10): refused, nothing changes
	before := e.upgrades("echo-server")
	e.setConfigMap(map[string]string{"debugToolsEnabled": "true", "echoServer": "replicas: 99\n"})
	e.eventually("the bad change to be refused", func() bool { return testutilCounter(e, "addon_operator_config_errors") >= 1 })
	e.idle()
	if e.upgrades("echo-server") != before {
		t.Fatal("an invalid ConfigMap reached Helm")
	}
	if _, err := os.Stat(filepath.Join(abs, "modules/003-debug-tools/Chart.yaml")); err == nil {
		t.Fatal("debug-tools is meant to show a chart without Chart.yaml")
	}
}
