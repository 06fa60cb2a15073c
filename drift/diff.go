package drift

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// ErrNoRelease: there is no deployed release of ours of that name.
var ErrNoRelease = errors.New("no deployed release")

// Diff is the live diff of a release's drifted objects: for each, a
// unified diff from the live object to what applying the chart would make
// of it. The values of sensitive objects (a Secret's data and stringData,
// the kinds of Options.Sensitive), and whatever embeds them, are shown as
// "(redacted)", or "(redacted, differs)" where the chart's differs
// (redact.go; docs/security.md, "Who sees what"). No drift is the empty
// string.
func (d *Detector) Diff(ctx context.Context, release string) (string, error) {
	_, ins, ok, err := d.check(ctx, release)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("release %s: %w", release, ErrNoRelease)
	}
	red := newRedactor(d.opts.Sensitive)
	var b strings.Builder
	for _, in := range ins {
		if len(in.obj.Fields) == 0 {
			continue
		}
		text, err := objectDiff(red, in.obj, in.live, in.applied)
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// objectDiff is one object's unified diff.
func objectDiff(red redactor, o Object, live, applied map[string]any) (string, error) {
	// redact changes what it hides in place: copies of what is shown, not
	// the objects read
	l, a := runtime.DeepCopyJSON(shown(live)), runtime.DeepCopyJSON(shown(applied))
	red.redact(l, a)
	ly, err := yaml.Marshal(l)
	if err != nil {
		return "", err
	}
	ay, err := yaml.Marshal(a)
	if err != nil {
		return "", err
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(ly)), B: difflib.SplitLines(string(ay)),
		FromFile: "live/" + o.Ref(), ToFile: "chart/" + o.Ref(), Context: 3,
	})
	if err != nil {
		return "", err
	}
	if len(o.Ignored) > 0 {
		text += "# left to other controllers: " + strings.Join(o.Ignored, ", ") + "\n"
	}
	return text, nil
}

// shown is an object without what the API server sets on every write.
func shown(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if serverSetTop[k] {
			continue
		}
		out[k] = v
	}
	if m, ok := obj["metadata"].(map[string]any); ok {
		mm := make(map[string]any, len(m))
		for k, v := range m {
			if !serverSetMeta[k] && k != "uid" && k != "creationTimestamp" {
				mm[k] = v
			}
		}
		out["metadata"] = mm
	}
	return out
}
