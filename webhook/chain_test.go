package webhook

import (
	"slices"
	"testing"

	"github.com/addonops/addon-operator/loader"
)

func TestConversionPath(t *testing.T) {
	const crd = "crontabs.stable.example.com"
	entry := func(hook string, rules ...string) ConversionEntry {
		b := loader.ConversionBinding{Name: hook + "-binding", CRDName: crd}
		for i := 0; i < len(rules); i += 2 {
			b.Conversions = append(b.Conversions, loader.ConversionRule{FromVersion: rules[i], ToVersion: rules[i+1]})
		}
		return ConversionEntry{Hook: hook, Binding: b}
	}
	// shell-operator's documented example, split over two hooks
	entries := []ConversionEntry{
		entry("a", "unstable.crontab.io/v1beta1", "stable.example.com/v1beta1", "stable.example.com/v1beta1", "stable.example.com/v1beta2"),
		entry("b", "v1beta2", "v1"),
		{Hook: "other", Binding: loader.ConversionBinding{CRDName: "other.example.com", Conversions: []loader.ConversionRule{{FromVersion: "v1", ToVersion: "v9"}}}},
	}
	tests := []struct {
		name, from, to string
		want           []string // hook:to of each step
	}{
		{"one step", "stable.example.com/v1beta1", "stable.example.com/v1beta2", []string{"a:stable.example.com/v1beta2"}},
		{"bare versions take the CRD's group", "stable.example.com/v1beta2", "stable.example.com/v1", []string{"b:stable.example.com/v1"}},
		{"chained across hooks", "unstable.crontab.io/v1beta1", "stable.example.com/v1",
			[]string{"a:stable.example.com/v1beta1", "a:stable.example.com/v1beta2", "b:stable.example.com/v1"}},
		{"no way back", "stable.example.com/v1", "stable.example.com/v1beta1", nil},
		{"another CRD's rules are not used", "stable.example.com/v1", "stable.example.com/v9", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range ConversionPath(crd, entries, tt.from, tt.to) {
				got = append(got, s.Hook+":"+s.To)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("path = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseResponses(t *testing.T) {
	tests := []struct {
		name, in string
		allowed  bool
		message  string
		bad      bool
	}{
		{"allow", `{"allowed":true}`, true, "", false},
		{"allow with warnings", `{"allowed":true,"warnings":["a","b"]}`, true, "", false},
		{"deny", `{"allowed":false,"message":"no"}`, false, "no", false},
		{"unknown fields are kept quiet, as in shell-operator", `{"allowed":true,"extra":1}`, true, "", false},
		{"empty is a denial", ``, false, "the hook wrote no response", true},
		{"garbage is a denial", `allowed`, false, "the hook's response is not valid", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseAdmissionResponse([]byte(tt.in))
			if r.Allowed != tt.allowed || r.Message != tt.message || (err != nil) != tt.bad {
				t.Fatalf("got %+v, %v", r, err)
			}
		})
	}
	if _, err := ParseConversionResponse([]byte(`{"failedMessage":"cannot"}`)); err == nil || err.Error() != "cannot" {
		t.Fatalf("failedMessage: %v", err)
	}
	if objs, err := ParseConversionResponse([]byte(`{"convertedObjects":[{"apiVersion":"a/v2"}]}`)); err != nil || len(objs) != 1 {
		t.Fatalf("converted: %v %v", objs, err)
	}
	if _, err := ParseConversionResponse(nil); err == nil {
		t.Fatal("an empty response converted")
	}
}
