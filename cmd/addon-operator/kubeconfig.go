package main

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restConfig loads a kubeconfig (its current context, or the one named),
// or the in-cluster config when neither a kubeconfig, a context nor a
// server is given. Client-side throttling is lifted to what an API server
// takes: the operator's work is bursts of small requests.
func restConfig(o kubeOptions) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Config == "" && o.Context == "" && o.Server == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.Config
		overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context, ClusterInfo: clientcmdapi.Cluster{Server: o.Server}}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "addon-operator"
	return cfg, nil
}
