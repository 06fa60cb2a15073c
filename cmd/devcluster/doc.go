// Command devcluster runs the local control plane from bin/ (etcd,
// kube-apiserver, and with -workloads kube-controller-manager,
// kube-scheduler and kwok with one simulated node, so Deployments roll out)
// until interrupted, and writes an admin kubeconfig. `make run` uses it when
// no cluster is given.
package main
