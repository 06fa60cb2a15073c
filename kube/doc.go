// Package kube owns everything that talks to the API server: the ConfigMap
// config backend (watch and patch) and its Warning Events, the monitors
// behind kubernetes and onKubernetesEvent bindings (reflectors into their
// own store, selectors, jqFilter), the Helm client (helm.sh/helm/v3 as a
// library), modules' CRDs and leader election on a Lease.
//
// Where things are:
//   - configmap.go, event.go: the values ConfigMap and Events on it.
//   - helm.go: the Helm client, release ownership and the releases snapshot
//     (heads.go: the records as heads, listed and decoded; roundtrips.go:
//     Helm's reads answered from what the client knows; readahead.go: a
//     release read beside its module's hooks; recordwriter.go: the records
//     Helm writes, encoded); upgrade.go installs
//     and upgrades, heal.go repairs stuck releases and
//     finds missing resources, manifest.go gives drift checks a release's
//     manifest and Helm's field manager, chart.go loads, caches and renders
//     charts (rendersum.go: a render's checksum kept while its inputs
//     are the same), restgetter.go hands Helm its clients.
//   - monitor.go: a binding's Monitor; sources.go, its memberships in shared
//     watches, one per namespace, following a namespace label selector.
//   - watcher.go: the Watcher, the registry of shared watches; sharedwatch.go,
//     one shared reflector and its members; store.go, the store the reflector
//     fills; record.go, one stored object and its members' filter results;
//     member.go, a binding's part of a shared watch; jq.go, jqFilter.
//   - crds.go: modules' CRDs; leader.go: leader election.
package kube
