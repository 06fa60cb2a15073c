// Package kube owns everything that talks to the API server: the ConfigMap
// config backend (watch and patch), the monitors behind kubernetes and
// onKubernetesEvent bindings (reflectors into their own store, selectors,
// jqFilter), the Helm client (helm.sh/helm/v3 as a library) and leader
// election on a Lease.
package kube
