package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeName is the simulated node WithWorkloads creates.
const NodeName = "kwok-node-0"

// FailPodLabel on a pod makes kwok fail its containers about a second after
// they start (kwok's "pod-container-running-failed" stage, among the stages
// `make testcluster` writes to bin/kwok-stages.yaml). Tests and charts use
// it to make a workload that never becomes ready.
const FailPodLabel = "pod-container-running-failed.stage.kwok.x-k8s.io"

// NeverReadyPodLabel on a pod makes kwok start it without it ever becoming
// ready (our stage hack/kwok-never-ready.yaml): a workload stuck rolling out.
const NeverReadyPodLabel = "addonops.io/kwok-never-ready"

// kwokNodeAnnotation marks the nodes kwok manages, so a kwok started here
// never takes over a node something else made.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// The controllers pods need to roll out and be cleaned up; the others
// (node lifecycle, service accounts, certificates...) need a kubelet or
// keys this control plane does not have.
var controllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"daemonset-controller",
	"statefulset-controller",
	"job-controller",
	"cronjob-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"horizontal-pod-autoscaler-controller",
	"endpointslice-controller",
	"disruption-controller",
	// removes the not-ready taint the API server puts on a new node once kwok
	// reports it Ready
	"node-lifecycle-controller",
}

// WithWorkloads also starts kube-controller-manager, kube-scheduler and kwok
// with one simulated node, so Deployments, DaemonSets, StatefulSets and Jobs
// roll out and become ready without a container runtime.
func WithWorkloads() Option { return func(c *ControlPlane) { c.workloads = true } }

// workloadBinaries are what WithWorkloads needs beside etcd and the API server.
var workloadBinaries = []string{"kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"}

type workloadProcs struct {
	cmds   []*exec.Cmd
	exited []<-chan struct{}
}

// startWorkloads starts the three processes and the node; the API server is
// ready and the kubeconfig written.
func (c *ControlPlane) startWorkloads(ctx context.Context) error {
	for _, b := range workloadBinaries {
		if _, err := os.Stat(filepath.Join(c.binDir, b)); err != nil {
			return fmt.Errorf("%w (looked for %s)", ErrNoBinaries, filepath.Join(c.binDir, b))
		}
	}
	kwokPort, err := freePort()
	if err != nil {
		return err
	}
	procs := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + c.KubeconfigPath,
			"--leader-elect=false",
			"--secure-port=0",
			"--controllers=" + strings.Join(controllers, ","),
			// Quick rollouts and garbage collection: tests wait on them.
			"--concurrent-deployment-syncs=5",
			"--concurrent-gc-syncs=5",
			"--v=0",
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + c.KubeconfigPath,
			"--leader-elect=false",
			"--secure-port=0",
			"--v=0",
		}},
		{"kwok", []string{
			"--kubeconfig=" + c.KubeconfigPath,
			"--config=" + filepath.Join(c.binDir, "kwok-stages.yaml"),
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
			"--cidr=10.244.0.1/24",
			"--node-ip=127.0.0.1",
		}},
	}
	for _, p := range procs {
		cmd, err := c.command(p.name, p.args...)
		if err != nil {
			return err
		}
		exited := make(chan struct{})
		go func() {
			_, _ = cmd.Process.Wait()
			close(exited)
		}()
		c.work.cmds = append(c.work.cmds, cmd)
		c.work.exited = append(c.work.exited, exited)
	}
	return c.addNode(ctx)
}

// addNode creates the simulated node and waits until kwok reports it Ready.
func (c *ControlPlane) addNode(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Allocatable: nodeResources(),
			Capacity:    nodeResources(),
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", NodeName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err == nil && nodeReady(n) {
			return nil
		}
		for i, exited := range c.work.exited {
			select {
			case <-exited:
				name := filepath.Base(c.work.cmds[i].Path)
				return fmt.Errorf("%s exited before the node was ready:\n%s", name, c.logTail(name))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not ready after %s:\n%s", NodeName, readyTimeout, c.logTail("kwok"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("500"),
	}
}

func (c *ControlPlane) stopWorkloads() {
	// the reverse of the start order: kwok before the controllers
	for i := len(c.work.cmds) - 1; i >= 0; i-- {
		stopProcess(c.work.cmds[i], c.work.exited[i])
	}
	c.work = workloadProcs{}
}
