package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"reflect"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwait "k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// crdDir is where a module keeps the CRDs applied before its chart.
const crdDir = "crds"

// CRDs applies the CustomResourceDefinitions of a module's crds/
// directory, as the original addon-operator does before a module runs:
// created when missing, updated when their spec, labels or annotations
// differ, left alone otherwise. Helm is told to skip them.
//
// Each CRD carries the module's and the instance's labels; one that exists
// without them is not ours and is never updated (see owns).
type CRDs struct {
	client apiextensions.Interface
	// maxFile bounds each file read.
	maxFile  int64
	instance string
}

// NewCRDs returns a CRD applier for the cluster; WithInstance names the
// operator instance (its namespace and ConfigMap) the CRDs are labelled
// with.
func NewCRDs(cfg *rest.Config, opts ...Option) (*CRDs, error) {
	c, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o := newOptions("", opts)
	return &CRDs{client: c, maxFile: 4 << 20, instance: o.instance}, nil
}

// Ensure applies every CRD under moduleDir/crds of the module: files
// ending in .yaml, except those whose name starts with "doc-" or "_" (the
// original's default filter), each holding one or more YAML documents. It
// returns how many CRDs it created or updated, once the API server serves
// them. Reads stay inside moduleDir; with files (the module's chart as the
// loader reads it, loader.Model.ChartFS: links through the tree root alias
// mapped, every read bounded by the tree's root) they go through it
// instead, as Helm's do (docs/operator.md, "Trees from git").
func (c *CRDs) Ensure(ctx context.Context, module, moduleDir string, files fs.FS) (int, error) {
	fsys := files
	if fsys == nil {
		root, err := os.OpenRoot(moduleDir)
		if err != nil {
			return 0, err
		}
		defer root.Close()
		fsys = root.FS()
	}
	var names []string
	err := fs.WalkDir(fsys, crdDir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == crdDir {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		name := path.Base(p)
		if strings.HasSuffix(name, ".yaml") && !strings.HasPrefix(name, "doc-") && !strings.HasPrefix(name, "_") {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", crdDir, err)
	}
	var written []string
	var errs []error
	for _, f := range names {
		crds, err := c.ensureFile(ctx, module, fsys, f)
		written = append(written, crds...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(written), err
	}
	return len(written), c.established(ctx, written)
}

// crdEstablishTimeout bounds the wait for written CRDs to be served.
const crdEstablishTimeout = 30 * time.Second

// established waits until the API server serves the CRDs (their
// Established condition), so the chart that follows can use their kinds.
func (c *CRDs) established(ctx context.Context, names []string) error {
	api := c.client.ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range names {
		err := apiwait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
			crd, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// ensureFile applies the CRDs of one file; it returns the names of those it wrote.
func (c *CRDs) ensureFile(ctx context.Context, module string, fsys fs.FS, name string) ([]string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, c.maxFile+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > c.maxFile {
		return nil, fmt.Errorf("larger than %d bytes", c.maxFile)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var written []string
	for doc := 1; ; doc++ {
		var crd apiextensionsv1.CustomResourceDefinition
		err := dec.Decode(&crd)
		if errors.Is(err, io.EOF) {
			return written, nil
		}
		if err != nil {
			return written, fmt.Errorf("document %d: %w", doc, err)
		}
		if crd.APIVersion == "" && crd.Kind == "" && crd.Name == "" {
			continue // an empty document
		}
		if crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
			return written, fmt.Errorf("document %d: %s %s is not an apiextensions.k8s.io/v1 CustomResourceDefinition", doc, crd.APIVersion, crd.Kind)
		}
		ok, err := c.apply(ctx, module, &crd)
		if err != nil {
			return written, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		if ok {
			written = append(written, crd.Name)
		}
	}
}

// apply creates the CRD or updates the one in the cluster when it differs
// and is the module's; it reports whether it wrote.
func (c *CRDs) apply(ctx context.Context, module string, want *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	api := c.client.ApiextensionsV1().CustomResourceDefinitions()
	want = want.DeepCopy()
	want.Labels = mergeStrings(want.Labels, map[string]string{LabelManagedBy: ManagedByValue, LabelInstance: c.instance, LabelModule: module})
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			fresh := want.DeepCopy()
			fresh.ResourceVersion = ""
			_, err = api.Create(ctx, fresh, metav1.CreateOptions{FieldManager: FieldManagerCRDs})
			wrote = err == nil
			return err
		}
		if err != nil {
			return err
		}
		if err := c.owns(module, have); err != nil {
			return err
		}
		next := have.DeepCopy()
		next.Spec = want.Spec
		// the conversion the cluster has (a webhook's CA bundle injected
		// there) stays unless the file says otherwise
		if want.Spec.Conversion == nil {
			next.Spec.Conversion = have.Spec.Conversion
		}
		next.Labels = mergeStrings(have.Labels, want.Labels)
		next.Annotations = mergeStrings(have.Annotations, want.Annotations)
		if reflect.DeepEqual(next.Spec, have.Spec) && maps.Equal(next.Labels, have.Labels) && maps.Equal(next.Annotations, have.Annotations) {
			return nil
		}
		_, err = api.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManagerCRDs})
		wrote = err == nil
		return err
	})
	return wrote, err
}

func mergeStrings(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

// ErrCRDNotOurs says a CRD of that name exists and this module may not
// update it.
var ErrCRDNotOurs = errors.New("not updated")

// owns says whether the module may update the CRD in the cluster: one it
// labelled itself, or one the original addon-operator applied (heritage
// label, taken over). A CRD of another tool, another module or another
// operator instance is left alone (docs/security.md, "Ownership").
func (c *CRDs) owns(module string, have *apiextensionsv1.CustomResourceDefinition) error {
	l := have.Labels
	switch {
	case l[LabelModule] == module && l[LabelInstance] == c.instance && l[LabelManagedBy] == ManagedByValue:
		return nil
	case l[LabelManagedBy] == ManagedByValue && l[LabelInstance] != c.instance:
		return fmt.Errorf("belongs to operator instance %q (label %s), this is %q: %w", l[LabelInstance], LabelInstance, c.instance, ErrCRDNotOurs)
	case l[LabelManagedBy] == ManagedByValue && l[LabelModule] != "":
		return fmt.Errorf("modules %s and %s both ship it; it belongs to %s (label %s): %w", l[LabelModule], module, l[LabelModule], LabelModule, ErrCRDNotOurs)
	case l[LabelHeritage] == HeritageValue && l[LabelModule] == "":
		return nil // the original addon-operator's: ours from now on
	}
	return fmt.Errorf("exists and is not ours (no %s=%s label); to let module %s manage it, label it: kubectl label crd %s %s=%s %s=%s %s=%s: %w",
		LabelModule, module, module, have.Name, LabelManagedBy, ManagedByValue, LabelInstance, c.instance, LabelModule, module, ErrCRDNotOurs)
}
