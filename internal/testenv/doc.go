// Package testenv starts a real local control plane (etcd and kube-apiserver
// built by `make testcluster` into bin/) on loopback ports, with an admin
// identity, for integration tests and for `make run`. It owns the processes'
// lifetimes: they are stopped by PID and die with the process that started them.
package testenv
