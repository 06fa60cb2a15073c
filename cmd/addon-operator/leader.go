package main

import (
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/kube"
)

// leader makes the election of the settings; nil without leader election.
// It only prepares: the Lease is taken when the run group starts it.
func (o leaderOptions) leader(restConfig *rest.Config, namespace, configMap string, logger *slog.Logger) (*kube.Leader, error) {
	if !o.Enabled {
		return nil, nil
	}
	name := o.Name
	if name == "" {
		name = configMap
	}
	// client-go's election writes the Lease under the user agent's name
	leaseClient, err := kubernetes.NewForConfig(kube.WithUserAgent(restConfig, kube.FieldManagerLeader))
	if err != nil {
		return nil, err
	}
	return kube.NewLeader(leaseClient, kube.LeaderOptions{Namespace: namespace, Name: name, LeaseDuration: o.LeaseDuration, Logger: logger})
}

// acting: this process acts on the cluster (always without leader
// election; while it holds the Lease with it).
func acting(l *kube.Leader) bool { return l == nil || l.Leading() }
