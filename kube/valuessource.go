package kube

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/values"
)

// ClusterValues is the cluster's side of the config values: the values
// ConfigMap's data with the values Secret's keys merged over it, maps key
// by key and anything else replaced, a Secret key winning
// (docs/operator.md, "Secrets"). It is the operator's config backend
// when a values Secret is set: Get and Watch give the merged data, Update
// writes the ConfigMap alone (hooks' config patches never reach the
// Secret).
//
// Versions: the merged data's version is a counter of this process that
// grows with every change of either object, so the running store's
// "older data is skipped" holds across both: a ConfigMap event that echoes
// a write Update already returned is not a change, and neither is a
// resync of either.
//
// The Secret's values are told to the Redactor before any data holding
// them is handed on. A Secret that is not readable (a key that is not
// YAML, a failed list or watch) hands nothing on: the last good data
// keeps running and the error names the Secret and the key.
type ClusterValues struct {
	cm       *ConfigMap
	secret   *ValuesSecret
	redactor *values.Redactor
	onError  func(error)

	deliver sync.Mutex // one onChange at a time, in version order
	mu      sync.Mutex
	cmData  map[string]string
	cmVer   string
	cmSeen  bool
	// cmWatched: the watch has reported the ConfigMap, whose state Get
	// (which has no version of it) no longer replaces
	cmWatched bool
	secData   map[string]string // the last good Secret data
	secVer    string
	secSeen   bool
	version   uint64
}

// NewClusterValues merges secret over cm; redactor (nil: none) is told
// each Secret's values, onError (nil: none) each Secret that is not
// readable while it is watched.
func NewClusterValues(cm *ConfigMap, secret *ValuesSecret, redactor *values.Redactor, onError func(error)) *ClusterValues {
	if onError == nil {
		onError = func(error) {}
	}
	return &ClusterValues{cm: cm, secret: secret, redactor: redactor, onError: onError}
}

// Name names both objects.
func (c *ClusterValues) Name() string {
	return "ConfigMap " + c.cm.Name() + " and Secret " + c.secret.Name()
}

// readSecret checks the Secret's data (every key YAML) and tells the
// Redactor its values.
func (c *ClusterValues) readSecret(data map[string]string) error {
	sens, err := values.SensitiveFromData(data)
	if err != nil {
		return fmt.Errorf("values Secret %s: %w", c.secret.Name(), err)
	}
	c.redactor.Add(sens, data)
	return nil
}

// mergeSecret lays the Secret's data over the ConfigMap's.
func mergeSecret(cm, secret map[string]string) (map[string]string, error) {
	if len(secret) == 0 {
		return cm, nil
	}
	out, _, err := clusterconfig.Overlay(cm, &clusterconfig.Config{Data: secret})
	return out, err
}

// Get reads both objects and returns the merged data.
func (c *ClusterValues) Get(ctx context.Context) (map[string]string, error) {
	cm, err := c.cm.Get(ctx)
	if err != nil {
		return nil, err
	}
	sec, ver, err := c.secret.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.readSecret(sec); err != nil {
		return nil, err
	}
	// what the watch starts from: a missing object gives it no first
	// event, and a Secret the watch first sees bad leaves this one as the
	// last good
	c.mu.Lock()
	if !c.cmWatched {
		c.cmData, c.cmSeen = cm, true
	}
	if !c.secSeen || NewerVersion(ver, c.secVer) {
		c.secData, c.secVer, c.secSeen = sec, ver, true
	}
	c.mu.Unlock()
	return mergeSecret(cm, sec)
}

// ClusterData is ConfigMap data with the last good Secret data merged
// over it: what a hook's config patch will make of the cluster's side,
// for checking it before it is written.
func (c *ClusterValues) ClusterData(cm map[string]string) (map[string]string, error) {
	c.mu.Lock()
	sec := c.secData
	c.mu.Unlock()
	return mergeSecret(cm, sec)
}

// Update applies fn to the ConfigMap's data alone and writes it; it
// returns the newest merged data (the write's, or an edit the watch
// delivered after it) and its version.
func (c *ClusterValues) Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error) {
	data, ver, err := c.cm.Update(ctx, fn)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if NewerVersion(ver, c.cmVer) {
		c.cmData, c.cmVer = data, ver
	}
	// the newest ConfigMap data known: an edit the watch delivered after
	// this write is newer than it, and its answer must not undo the edit
	merged, err := mergeSecret(maps.Clone(c.cmData), c.secData)
	if err != nil {
		return nil, "", err
	}
	c.version++
	return merged, strconv.FormatUint(c.version, 10), nil
}

// Watch calls onChange with the merged data and its version after every
// change of either object, once both were read (by Get, which the
// operator calls first, or by the watch), until ctx is done. Calls are
// sequential.
func (c *ClusterValues) Watch(ctx context.Context, onChange func(data map[string]string, version string)) {
	var wg sync.WaitGroup
	wg.Go(func() {
		c.cm.Watch(ctx, func(data map[string]string, ver string) {
			c.changed(onChange, func() bool {
				if ver != "" && c.cmSeen && !NewerVersion(ver, c.cmVer) {
					return false // an echo of Update's write, or older
				}
				c.cmData, c.cmVer, c.cmSeen, c.cmWatched = data, ver, true, true
				return true
			})
		})
	})
	wg.Go(func() {
		c.secret.Watch(ctx, func(data map[string]string, ver string) {
			if err := c.readSecret(data); err != nil {
				c.onError(fmt.Errorf("%w; nothing from it is applied, the last good values keep running", err))
				return
			}
			c.changed(onChange, func() bool {
				if ver != "" && c.secSeen && !NewerVersion(ver, c.secVer) {
					return false
				}
				c.secData, c.secVer, c.secSeen = data, ver, true
				return true
			})
		}, func(err error) { c.onError(fmt.Errorf("%w; the last good values keep running", err)) })
	})
	wg.Wait()
}

// changed applies set under the lock and, when it changed something and
// both objects were read, hands on the merged data with the next version.
func (c *ClusterValues) changed(onChange func(map[string]string, string), set func() bool) {
	c.deliver.Lock()
	defer c.deliver.Unlock()
	c.mu.Lock()
	if !set() || !c.cmSeen || !c.secSeen {
		c.mu.Unlock()
		return
	}
	merged, err := mergeSecret(maps.Clone(c.cmData), c.secData)
	c.version++
	ver := strconv.FormatUint(c.version, 10)
	c.mu.Unlock()
	if err != nil {
		c.onError(fmt.Errorf("%s: %w", c.Name(), err))
		return
	}
	onChange(merged, ver)
}

// NewerVersion compares resourceVersions. They are opaque to clients, but
// etcd's are increasing integers; anything else counts as newer when it
// differs, and so does data without a version (a deleted object).
func NewerVersion(v, than string) bool {
	if v == "" || than == "" {
		return true
	}
	a, errA := strconv.ParseUint(v, 10, 64)
	b, errB := strconv.ParseUint(than, 10, 64)
	if errA != nil || errB != nil {
		return v != than
	}
	return a > b
}
