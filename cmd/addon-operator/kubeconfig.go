package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restConfig loads a kubeconfig (its current context, or the one named),
// or, when neither a kubeconfig, a context nor a server is given, the
// in-cluster config and then ~/.kube/config, as kubectl users expect.
// Client-side throttling is lifted to what an API server takes: the
// operator's work is bursts of small requests.
func restConfig(o kubeOptions) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Config == "" && o.Context == "" && o.Server == "" {
		cfg, err = defaultConfig()
	} else {
		cfg, err = kubeconfig(o)
		if err != nil {
			err = fmt.Errorf("kubernetes client config: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "addon-operator"
	return cfg, nil
}

func kubeconfig(o kubeOptions) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Config
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context, ClusterInfo: clientcmdapi.Cluster{Server: o.Server}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// defaultConfig is the in-cluster config, else ~/.kube/config; with
// neither, an error that says what was tried and how to name a cluster.
func defaultConfig() (*rest.Config, error) {
	cfg, inErr := rest.InClusterConfig()
	if inErr == nil {
		return cfg, nil
	}
	home, _ := os.UserHomeDir()
	path := filepath.Join(home, ".kube", "config")
	if _, err := os.Stat(path); err == nil && home != "" {
		cfg, err := kubeconfig(kubeOptions{Config: path})
		if err != nil {
			return nil, fmt.Errorf("kubernetes client config %s (used because neither KUBECONFIG nor the in-cluster config is set): %w", path, err)
		}
		return cfg, nil
	}
	inCluster := inErr.Error()
	if errors.Is(inErr, rest.ErrNotInCluster) {
		inCluster = "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: not running in a pod"
	}
	return nil, fmt.Errorf(`no Kubernetes cluster to talk to. Tried:
  - the in-cluster config: %s
  - KUBECONFIG (--kubeconfig): not set
  - %s: not found
Point it at a cluster with --kubeconfig FILE (env KUBECONFIG), --kube-context NAME or
--kube-server URL; for a local control plane with the examples/ modules, run 'make run'
in a clone of this repository`, inCluster, path)
}

// kubeClient is a clientset for the CLI's one-shot commands (config
// export, source set-ref).
func kubeClient(o kubeOptions) (*kubernetes.Clientset, error) {
	cfg, err := restConfig(o)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
