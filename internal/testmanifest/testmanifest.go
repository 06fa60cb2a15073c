// Package testmanifest decodes the YAML streams of manifests tests read
// (deploy/addon-operator.yaml, a chart's render, a release's manifest)
// into objects. For tests only.
package testmanifest

import (
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Objects decodes every object of a YAML (or JSON) stream, in order,
// skipping empty documents; a document that does not decode fails t.
func Objects(t testing.TB, r io.Reader) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.Object != nil {
			out = append(out, obj)
		}
	}
}

// FromString is Objects of a string.
func FromString(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	return Objects(t, strings.NewReader(manifest))
}
