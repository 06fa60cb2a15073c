package rollout

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/addonops/addon-operator/changewindow"
	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/ring"
)

// The sections of the config in git's `addon-operator:` key this package
// reads (clusterconfig.Settings.OperatorSections).
const (
	SectionRollout = "rollout"
	SectionWindows = "windows"
)

// Sections are the operator sections to accept when the config in git is on.
var Sections = []string{SectionRollout, SectionWindows}

// Config is what Parse reads: clusterconfig.Config.
type Config interface {
	Operator(name string, into any) (bool, error)
}

var _ Config = (*clusterconfig.Config)(nil)

// RolloutSpec is the `rollout:` section: ring.Spec and holdRollbacks.
type RolloutSpec struct {
	ring.Spec
	// HoldRollbacks: rings hold rollbacks too (default: they do not).
	HoldRollbacks bool `json:"holdRollbacks,omitempty"`
}

// Policy is one revision's parsed sections; the zero value holds nothing.
type Policy struct {
	// Ring is nil without a rollout section.
	Ring          *ring.Policy
	HoldRollbacks bool
	// Windows is nil without windows; Specs are the windows as written,
	// for /status.
	Windows *changewindow.Set
	Specs   []changewindow.Spec
}

// Summary is the policy in one line, for /status and the CLI.
func (p *Policy) Summary() string {
	if p == nil || (p.Ring == nil && p.Windows == nil) {
		return "none: every revision applies at once"
	}
	var parts []string
	if r := p.Ring; r != nil {
		s := fmt.Sprintf("ring %d", r.Ring)
		if r.Ring > 0 {
			s += fmt.Sprintf(" after %s of ring %d healthy", r.Healthy, r.Ring-1)
			if len(r.Previous) > 0 {
				s += " (" + strings.Join(r.Previous, ", ") + ")"
			}
			if r.Soak > 0 {
				s += ", soak " + r.Soak.String()
			}
		}
		if p.HoldRollbacks {
			s += ", rollbacks held too"
		}
		parts = append(parts, s)
	}
	for _, w := range p.Specs {
		tz := w.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		parts = append(parts, fmt.Sprintf("%s window %q %q for %s (%s)", w.Kind, w.Name, w.Schedule, w.Duration, tz))
	}
	return strings.Join(parts, "; ")
}

// Parse reads the rollout and windows sections of cfg (nil: none). forge
// says whether the forge's statuses can be read: a ring of 1 or more
// needs them, so without it the config is refused (never an apply by
// default). Errors are *clusterconfig.Error naming the files and the key
// (addon-operator.rollout.soak).
func Parse(cfg Config, files string, forge bool, now time.Time) (*Policy, error) {
	p := &Policy{}
	if cfg == nil {
		return p, nil
	}
	var errs []error
	var rs RolloutSpec
	set, err := cfg.Operator(SectionRollout, &rs)
	switch {
	case err != nil:
		errs = append(errs, err)
	case set:
		rp, err := ring.Parse(rs.Spec)
		if err != nil {
			errs = append(errs, fieldErrs(files, SectionRollout, err)...)
			break
		}
		if rp.Ring > 0 && !forge {
			errs = append(errs, &clusterconfig.Error{File: files, Key: key(SectionRollout, "ring"),
				Msg: fmt.Sprintf("%d: a ring after ring 0 waits for the statuses the previous ring posts on the forge, and none can be read: set ADDON_OPERATOR_COMMIT_STATUS_PROVIDER to github, gitea, forgejo or gitlab", rp.Ring)})
			break
		}
		p.Ring, p.HoldRollbacks = &rp, rs.HoldRollbacks
	}
	var ws []changewindow.Spec
	set, err = cfg.Operator(SectionWindows, &ws)
	switch {
	case err != nil:
		errs = append(errs, err)
	case set && len(ws) > 0:
		s, err := changewindow.Parse(ws, now)
		if err != nil {
			errs = append(errs, fieldErrs(files, SectionWindows, err)...)
			break
		}
		p.Windows, p.Specs = s, ws
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

func key(section, field string) string {
	k := clusterconfig.OperatorKey + "." + section
	if field != "" {
		k += "." + field
	}
	return k
}

// fieldLead is an error line that starts with the field it is about
// ("soak: ...").
var fieldLead = regexp.MustCompile(`^([a-zA-Z]+): (.*)$`)

// fieldErrs turns the lines of a section's parse error into errors that
// name the key: addon-operator.rollout.soak for "soak: ...".
func fieldErrs(files, section string, err error) []error {
	var out []error
	for _, line := range strings.Split(err.Error(), "\n") {
		e := &clusterconfig.Error{File: files, Key: key(section, ""), Msg: line}
		if m := fieldLead.FindStringSubmatch(line); m != nil && section == SectionRollout {
			e.Key, e.Msg = key(section, m[1]), m[2]
		}
		out = append(out, e)
	}
	return out
}
