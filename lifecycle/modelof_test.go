package lifecycle

import (
	"strings"
	"testing"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
)

// gitsync carries the checked model opaque: a revision is run with the
// model it was checked with, loads the configured directories without
// one, and is refused, naming its commit, when it holds anything else.
func TestModelOf(t *testing.T) {
	model := &loader.Model{}
	for _, tt := range []struct {
		name    string
		checked any
		want    *loader.Model
		err     string
	}{
		{name: "working copy", checked: nil},
		{name: "typed nil", checked: (*loader.Model)(nil)},
		{name: "checked model", checked: model, want: model},
		{name: "something else", checked: "a string", err: "revision abc was checked as a string, not a module tree"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := modelOf(gitsync.Revision{Commit: "abc", Checked: tt.checked})
			if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("modelOf = %p, %v; want %p, %q", got, err, tt.want, tt.err)
			}
		})
	}
}
