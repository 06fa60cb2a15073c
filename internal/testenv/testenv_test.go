package testenv

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestSmokeConfigMap(t *testing.T) {
	start := time.Now()
	cp, err := Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	t.Logf("control plane ready in %s", time.Since(start).Round(time.Millisecond))

	// through the kubeconfig file, as a user would
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "smoke", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("get = %v, %v", got, err)
	}

	// the API server restarts on the same port and keeps its data
	cp.StopAPIServer()
	if err := cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "smoke", metav1.GetOptions{}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func TestMissingBinaries(t *testing.T) {
	_, err := Start(t.Context(), WithBinDir(t.TempDir()))
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("err = %v, want ErrNoBinaries", err)
	}
}

func TestStopRemovesOwnDir(t *testing.T) {
	cp, err := Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pid := cp.apiserver.Process.Pid
	cp.Stop()
	if _, err := os.Stat(cp.Dir); !os.IsNotExist(err) {
		t.Fatalf("dir left behind: %v", err)
	}
	if err := cp.apiserverProcessAlive(pid); err == nil {
		t.Fatal("kube-apiserver still running")
	}
}

func (c *ControlPlane) apiserverProcessAlive(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(syscallZero)
}

var syscallZero = syscall.Signal(0)
