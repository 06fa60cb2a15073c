package drift

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/kube"
)

// Releases gives the manifest of a release's deployed revision: what the
// chart rendered, as Helm applied it.
type Releases interface {
	// Manifest is the release's manifest; ok is false when there is no
	// deployed release of ours of that name.
	Manifest(ctx context.Context, release string) (manifest string, ok bool, err error)
}

// Options bound and tune a Detector.
type Options struct {
	// FieldManager is the manager the dry-run and the correction apply
	// with (default kube.FieldManagerDrift): one of its own, so what it
	// sets is told from Helm's writes and the other parts'.
	FieldManager string
	// IgnoreManagers own fields the chart sets that are never drift
	// (default: kube-controller-manager). A write through a subresource
	// (an autoscaler's /scale) is never drift either.
	IgnoreManagers []string
	// OwnManagers are the operator's own parts whose changes to a
	// release's objects are never drift nor undone: the webhook
	// registrar's conversion settings, hooks' object patches, and what
	// earlier versions wrote (default kube.OwnFieldManagers).
	OwnManagers []string
	// MaxObjects is how many objects of one release are checked (default
	// 500); the rest are counted in Report.Skipped.
	MaxObjects int
	// MaxManifestBytes refuses a larger manifest (default 8 MiB).
	MaxManifestBytes int
	// Concurrency bounds the objects checked at once, over all calls
	// (default 4).
	Concurrency int
	// Sensitive are kinds whose values Diff never shows, as a Secret's
	// data (always sensitive): redact.go.
	Sensitive []schema.GroupKind
	Logger    *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxObjects       = 500
	DefaultMaxManifestBytes = 8 << 20
	DefaultConcurrency      = 4
)

// DefaultIgnoreManagers are the managers whose fields are never drift.
var DefaultIgnoreManagers = []string{"kube-controller-manager"}

func (o Options) withDefaults() Options {
	if o.FieldManager == "" {
		o.FieldManager = kube.FieldManagerDrift
	}
	if o.IgnoreManagers == nil {
		o.IgnoreManagers = DefaultIgnoreManagers
	}
	if o.OwnManagers == nil {
		o.OwnManagers = kube.OwnFieldManagers
	}
	if o.MaxObjects <= 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	if o.MaxManifestBytes <= 0 {
		o.MaxManifestBytes = DefaultMaxManifestBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Object is one object of a release that drifted.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Fields are the paths that differ from the chart (never values).
	Fields []string `json:"fields"`
	// Ignored are fields the chart sets that another controller, or one
	// of the operator's own parts (Options.OwnManagers), owns.
	Ignored []string `json:"ignored,omitempty"`
}

// Ref is kind/namespace/name, for logs and Events.
func (o Object) Ref() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Report is what one check of a release found.
type Report struct {
	// Checked is how many objects were compared.
	Checked int `json:"checked"`
	// Skipped is how many were not, over Options.MaxObjects.
	Skipped int `json:"skipped,omitempty"`
	// Objects are the drifted ones, in manifest order.
	Objects []Object `json:"objects,omitempty"`
}

// Detector checks and corrects the drift of releases in one namespace.
type Detector struct {
	dyn       dynamic.Interface
	mapper    meta.ResettableRESTMapper
	releases  Releases
	namespace string
	opts      Options
	ignore    map[string]bool // IgnoreManagers and OwnManagers
	sem       chan struct{}

	mu    sync.Mutex
	cache map[string]parsed // by release
}

type parsed struct {
	manifest string
	objs     []*unstructured.Unstructured
	err      error
}

// New returns a Detector for the releases of namespace.
func New(cfg *rest.Config, namespace string, releases Releases, opts Options) (*Detector, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ignore := map[string]bool{}
	for _, m := range slices.Concat(opts.IgnoreManagers, opts.OwnManagers) {
		ignore[m] = true
	}
	return &Detector{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		releases: releases, namespace: namespace, opts: opts, ignore: ignore,
		sem: make(chan struct{}, opts.Concurrency), cache: map[string]parsed{}}, nil
}

// inspection is one object's check.
type inspection struct {
	obj     Object
	desired *unstructured.Unstructured // pruned of fields other controllers own
	live    map[string]any
	applied map[string]any // the dry-run's result
	res     dynamic.ResourceInterface
	absent  bool
}

// Check compares the objects of a release with the cluster; ok is false
// when there is no deployed release of ours.
func (d *Detector) Check(ctx context.Context, release string) (Report, bool, error) {
	rep, _, ok, err := d.check(ctx, release)
	return rep, ok, err
}

// Correct checks a release and applies the chart's fields of each drifted
// object again (without those other controllers own); it returns what it
// found and corrected.
func (d *Detector) Correct(ctx context.Context, release string) (Report, error) {
	// an object that cannot be checked (its kind no longer served) does
	// not keep the others from being corrected
	rep, ins, _, err := d.check(ctx, release)
	errs := []error{err}
	for _, in := range ins {
		if len(in.obj.Fields) == 0 {
			continue
		}
		_, err := in.res.Apply(ctx, in.desired.GetName(), in.desired, metav1.ApplyOptions{FieldManager: d.opts.FieldManager, Force: true})
		if err != nil {
			errs = append(errs, fmt.Errorf("release %s: correct %s: %w", release, in.obj.Ref(), err))
		}
	}
	return rep, errors.Join(errs...)
}

func (d *Detector) check(ctx context.Context, release string) (Report, []*inspection, bool, error) {
	objs, ok, err := d.objects(ctx, release)
	if err != nil || !ok {
		return Report{}, nil, ok, err
	}
	var rep Report
	if len(objs) > d.opts.MaxObjects {
		rep.Skipped = len(objs) - d.opts.MaxObjects
		objs = objs[:d.opts.MaxObjects]
	}
	ins := make([]*inspection, len(objs))
	errs := make([]error, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	for i, o := range objs {
		g.Go(func() error {
			select {
			case d.sem <- struct{}{}:
			case <-gctx.Done():
				return gctx.Err()
			}
			defer func() { <-d.sem }()
			ins[i], errs[i] = d.inspect(gctx, o)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("release %s: %w", release, errs[i])
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return rep, nil, true, err // cancelled
	}
	var out []*inspection
	for _, in := range ins {
		if in == nil || in.absent {
			continue
		}
		rep.Checked++
		if len(in.obj.Fields) > 0 {
			rep.Objects = append(rep.Objects, in.obj)
		}
		out = append(out, in)
	}
	return rep, out, true, errors.Join(errs...)
}

// inspect compares one object: a dry-run apply without force; its
// conflicts with other controllers are pruned from the object and it is
// tried again with force (a hand edit's manager is taken over, as the
// correction would).
func (d *Detector) inspect(ctx context.Context, desired *unstructured.Unstructured) (*inspection, error) {
	gvk := desired.GroupVersionKind()
	mapping, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// the API may have gained kinds since discovery was read
		d.mapper.Reset()
		mapping, err = d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	in := &inspection{obj: Object{APIVersion: desired.GetAPIVersion(), Kind: gvk.Kind, Name: desired.GetName()}}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := desired.GetNamespace()
		if ns == "" {
			ns = d.namespace
		}
		in.obj.Namespace = ns
		in.res = d.dyn.Resource(mapping.Resource).Namespace(ns)
	} else {
		in.res = d.dyn.Resource(mapping.Resource)
	}
	// a controller may write between the read and the dry-run (a
	// Deployment's revision annotation): compare only results made from
	// the version read
	for attempt := 1; ; attempt++ {
		live, err := in.res.Get(ctx, desired.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			in.absent = true // auto-healing's (docs/operator.md, "Events")
			return in, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", in.obj.Ref(), err)
		}
		if attempt == 1 && Covers(live.Object, precheckable(desired).Object) {
			return in, nil // the chart's fields are all as it set them
		}
		applied, err := d.dryRun(ctx, in, desired)
		if err != nil {
			return nil, err
		}
		if applied.GetResourceVersion() == live.GetResourceVersion() || attempt == maxAttempts {
			in.live, in.applied = live.Object, applied.Object
			break
		}
	}
	in.obj.Fields = Compare(in.live, in.applied)
	return in, nil
}

// precheckable is the object as the API server stores it where that is a
// plain rewrite: a Secret's stringData as base64 data.
func precheckable(desired *unstructured.Unstructured) *unstructured.Unstructured {
	sd, ok := desired.Object["stringData"].(map[string]any)
	if !ok || desired.GetKind() != "Secret" || desired.GetAPIVersion() != "v1" {
		return desired
	}
	out := desired.DeepCopy()
	data, _ := out.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		s, ok := v.(string)
		if !ok {
			return desired
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	out.Object["data"] = data
	delete(out.Object, "stringData")
	return out
}

// maxAttempts bounds the reads of an object that keeps changing.
const maxAttempts = 3

// dryRun applies desired without force as a dry-run; the conflicts with
// other controllers and with the operator's own parts (Options.OwnManagers)
// are pruned from it (in.desired) and it is applied again with force, as
// a correction would (a hand edit's manager loses its fields).
func (d *Detector) dryRun(ctx context.Context, in *inspection, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	in.desired, in.obj.Ignored = desired, nil
	dry := metav1.ApplyOptions{FieldManager: d.opts.FieldManager, DryRun: []string{metav1.DryRunAll}}
	applied, err := in.res.Apply(ctx, desired.GetName(), desired, dry)
	if cs, ok := conflicts(err); ok {
		in.desired = desired.DeepCopy()
		for _, c := range leftAlone(cs, d.ignore) {
			if _, err := prune(in.desired.Object, c.Field); err != nil {
				return nil, fmt.Errorf("%s: %w", in.obj.Ref(), err)
			}
			in.obj.Ignored = append(in.obj.Ignored, c.String())
			d.opts.Logger.Debug("field left to another controller", "object", in.obj.Ref(), "field", c.Field, "manager", c.Manager, "subresource", c.Subresource)
		}
		dry.Force = true
		applied, err = in.res.Apply(ctx, desired.GetName(), in.desired, dry)
	}
	if err != nil {
		return nil, fmt.Errorf("dry-run apply %s: %w", in.obj.Ref(), err)
	}
	return applied, nil
}

// leftAlone are the conflicts whose fields are not drift: every owner of
// the field wrote through a subresource or is one of ignore (other
// controllers, the operator's own parts). A field is drift when any of its
// owners is a hand edit or another tool, even if another is left alone.
func leftAlone(cs []Conflict, ignore map[string]bool) []Conflict {
	drifted := map[string]bool{}
	for _, c := range cs {
		if c.Subresource == "" && !ignore[c.Manager] {
			drifted[c.Field] = true
		}
	}
	var out []Conflict
	for _, c := range cs {
		if !drifted[c.Field] {
			out = append(out, c)
		}
	}
	return out
}

// objects parses a release's manifest, cached while it is unchanged.
func (d *Detector) objects(ctx context.Context, release string) ([]*unstructured.Unstructured, bool, error) {
	manifest, ok, err := d.releases.Manifest(ctx, release)
	if err != nil || !ok {
		return nil, ok, err
	}
	d.mu.Lock()
	p, cached := d.cache[release]
	d.mu.Unlock()
	if !cached || p.manifest != manifest {
		p = parsed{manifest: manifest}
		if len(manifest) > d.opts.MaxManifestBytes {
			p.err = fmt.Errorf("release %s: manifest of %d bytes is over the drift check's limit of %d", release, len(manifest), d.opts.MaxManifestBytes)
		} else {
			p.objs, p.err = parseManifest(manifest)
			if p.err != nil {
				p.err = fmt.Errorf("release %s: %w", release, p.err)
			}
		}
		d.mu.Lock()
		d.cache[release] = p
		d.mu.Unlock()
	}
	return p.objs, true, p.err
}

// Forget drops what the Detector keeps of a release (its module is gone).
func (d *Detector) Forget(release string) {
	d.mu.Lock()
	delete(d.cache, release)
	d.mu.Unlock()
}

// parseManifest reads a Helm manifest: YAML documents, a List's items
// each an object of their own.
func parseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		if len(strings.TrimSpace(stripComments(string(doc)))) == 0 {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("parse manifest: %w", err)
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.IsList() {
			err := u.EachListItem(func(o runtime.Object) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("parse manifest: %w", err)
			}
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("parse manifest: an object without kind or name")
		}
		out = append(out, u)
	}
	return out, nil
}

func stripComments(doc string) string {
	lines := strings.Split(doc, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") })
	return strings.Join(lines, "\n")
}
