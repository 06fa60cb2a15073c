package drift

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"
)

// ErrNoRelease: there is no deployed release of ours of that name.
var ErrNoRelease = errors.New("no deployed release")

// Diff is the live diff of a release's drifted objects: for each, a
// unified diff from the live object to what applying the chart would make
// of it. A Secret's data and stringData values are shown as "(redacted)",
// or "(redacted, differs)" where the chart's differs (docs/security.md,
// "Who sees what"). No drift is the empty string.
func (d *Detector) Diff(ctx context.Context, release string) (string, error) {
	_, ins, ok, err := d.check(ctx, release)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("release %s: %w", release, ErrNoRelease)
	}
	var b strings.Builder
	for _, in := range ins {
		if len(in.obj.Fields) == 0 {
			continue
		}
		text, err := objectDiff(in.obj, in.live, in.applied)
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// objectDiff is one object's unified diff.
func objectDiff(o Object, live, applied map[string]any) (string, error) {
	l, a := shown(live), shown(applied)
	if o.Kind == "Secret" && o.APIVersion == "v1" {
		redact(l, a)
	}
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

// redact replaces the values of a Secret's data and stringData in both
// sides, marking those that differ.
func redact(live, applied map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		lm, _ := live[field].(map[string]any)
		am, _ := applied[field].(map[string]any)
		nl, na := map[string]any{}, map[string]any{}
		for k, v := range lm {
			nl[k] = "(redacted)"
			if av, ok := am[k]; ok {
				na[k] = "(redacted)"
				if fmt.Sprint(av) != fmt.Sprint(v) {
					na[k] = "(redacted, differs)"
				}
			}
		}
		for k := range am {
			if _, ok := na[k]; !ok {
				na[k] = "(redacted)"
			}
		}
		if lm != nil {
			live[field] = nl
		}
		if am != nil {
			applied[field] = na
		}
	}
}
