package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/release"
)

// Labels that say which operator instance, and which module, owns what
// (docs/security.md, "Ownership").
const (
	// LabelInstance names the operator instance that owns a release or a
	// CRD: InstanceID of its namespace and values ConfigMap.
	LabelInstance = "addonops.io/instance"
	// LabelModule names the module whose crds/ a CRD comes from.
	LabelModule = "addonops.io/module"
	// LabelHeritage is the label the original addon-operator puts on the
	// CRDs it applies; such a CRD may be taken over.
	LabelHeritage  = "heritage"
	HeritageValue  = "addon-operator"
	maxLabelValue  = 63
	instanceDigest = 10 // hex digits of the digest in a shortened ID
)

// InstanceID names one operator instance: its namespace and values
// ConfigMap ("addons.addon-operator"). Two operators with their own
// ConfigMaps in one namespace are two instances. An ID longer than a label
// value may be is shortened and ends in a digest of the whole.
func InstanceID(namespace, configMap string) string {
	id := namespace + "." + configMap
	if len(id) <= maxLabelValue {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	digest := hex.EncodeToString(sum[:])[:instanceDigest]
	prefix := id[:maxLabelValue-instanceDigest-1]
	// a label value ends in an alphanumeric character; the digest does
	return prefix + "-" + digest
}

// Option configures a Helm client or a CRD applier.
type Option func(*options)

type options struct {
	instance string
	// pendingGrace is how old a pending revision must be before a
	// successor may clear it: a leader that lost its Lease may still be
	// writing it until then.
	pendingGrace time.Duration
}

// WithInstance sets the instance ID (InstanceID) whose releases and CRDs
// these are. Without it, the instance is the namespace's operator with
// the default ConfigMap name, "addon-operator".
func WithInstance(id string) Option { return func(o *options) { o.instance = id } }

// WithLeaseDuration says how long the leader Lease is: a pending revision
// younger than the Helm timeout plus this may still be being written by a
// leader that lost the Lease, and is left alone (docs/operator.md, "Leader
// election").
func WithLeaseDuration(d time.Duration) Option {
	return func(o *options) { o.pendingGrace = helmTimeout + d }
}

// WithoutFencing lets a pending revision be cleared at once: without
// leader election no other process of this instance may be writing it.
func WithoutFencing() Option { return func(o *options) { o.pendingGrace = 0 } }

func newOptions(namespace string, opts []Option) options {
	o := options{instance: "addon-operator", pendingGrace: helmTimeout + 15*time.Second}
	if namespace != "" {
		o.instance = InstanceID(namespace, o.instance)
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// ownership says who a release belongs to, from this instance's view.
type ownership int

const (
	ownedByUs       ownership = iota // ours, this instance's label
	ownedLegacy                      // ours, written before instances were labelled
	ownedByOriginal                  // the original addon-operator's (moduleChecksum)
	ownedByInstance                  // another instance of this operator
	ownedByOther                     // another tool's
)

// ownerOf says who rel belongs to, seen from the instance instance.
func ownerOf(rel *release.Release, instance string) ownership {
	inst, labelled := rel.Labels[LabelInstance]
	switch {
	case labelled && inst != instance:
		return ownedByInstance
	case rel.Labels[LabelManagedBy] == ManagedByValue && labelled:
		return ownedByUs
	case rel.Labels[LabelManagedBy] == ManagedByValue:
		return ownedLegacy
	case rel.Labels[LabelOriginalChecksum] != "":
		return ownedByOriginal
	}
	return ownedByOther
}

// notOurs is the error for a release that another tool or instance owns.
func notOurs(rel *release.Release, namespace, instance string) error {
	if inst := rel.Labels[LabelInstance]; inst != "" && inst != instance {
		return fmt.Errorf("release %s/%s belongs to operator instance %q (label %s), this is %q: %w", namespace, rel.Name, inst, LabelInstance, instance, ErrNotOurs)
	}
	return fmt.Errorf("release %s/%s: %w", namespace, rel.Name, ErrNotOurs)
}
