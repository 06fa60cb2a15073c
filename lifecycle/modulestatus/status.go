package modulestatus

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// Condition types, in kstatus form (Ready, Reconciling, Stalled) and ours.
const (
	CondReady       = "Ready"
	CondReconciling = "Reconciling"
	CondStalled     = "Stalled"
	CondHealthy     = "Healthy"
	CondDrifted     = "Drifted"
)

// maxObjects is how many objects not Current a status names: the count is
// whole, the names a hint (/status has them all).
const maxObjects = 3

// Status is a Module object's status.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Weight             int                `json:"weight"`
	Enabled            bool               `json:"enabled"`
	State              string             `json:"state"`
	Reason             string             `json:"reason,omitempty"`
	LastError          string             `json:"lastError,omitempty"`
	Revision           string             `json:"revision,omitempty"`
	Commit             string             `json:"commit,omitempty"`
	Drift              int                `json:"drift"`
	Health             *HealthStatus      `json:"health,omitempty"`
	Conditions         []metav1.Condition `json:"conditions"`
}

// HealthStatus is the module's release health, with the objects not Current.
type HealthStatus struct {
	Status     string   `json:"status"`
	Message    string   `json:"message,omitempty"`
	Total      int      `json:"total"`
	NotCurrent int      `json:"notCurrent"`
	Objects    []string `json:"objects,omitempty"`
}

// input is what one module's status is made of.
type input struct {
	weight   int
	state    runstate.Module
	known    bool // the registry has it
	health   *health.ModuleHealth
	drift    int
	ref, sha string
}

// build is a module's status; conditions' lastTransitionTime are left zero
// for carry (which keeps them from the status last written).
func build(in input) Status {
	st := Status{Weight: in.weight, State: string(runstate.StateDisabled), Drift: in.drift, Revision: in.ref, Commit: in.sha}
	if in.known {
		st.Enabled, st.State, st.Reason = in.state.Enabled, string(in.state.State), in.state.Reason
		st.LastError = oneLine(in.state.LastError)
		if !st.Enabled && in.state.DisabledReason != "" && st.Reason == "" {
			st.Reason = oneLine(in.state.DisabledReason)
		}
		if st.State == "" {
			st.State = string(runstate.StatePending)
		}
	}
	if h := in.health; h != nil {
		st.Health = &HealthStatus{Status: string(h.Status), Message: oneLine(h.Message), Total: h.Total, NotCurrent: len(h.Objects)}
		for i, o := range h.Objects {
			if i == maxObjects {
				break
			}
			st.Health.Objects = append(st.Health.Objects, fmt.Sprintf("%s: %s", o.ObjectRef.String(), o.Status))
		}
	}
	st.Conditions = conditions(st)
	return st
}

// conditions are kstatus's: Ready when the module ran and its objects are
// Current; Reconciling while it waits, runs or its objects progress;
// Stalled when it failed or its objects are Degraded; and Healthy,
// Drifted.
func conditions(st Status) []metav1.Condition {
	hs := ""
	if st.Health != nil {
		hs = st.Health.Status
	}
	cond := func(typ string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg}
	}
	var out []metav1.Condition
	switch {
	case !st.Enabled:
		out = append(out, cond(CondReady, false, "Disabled", st.Reason))
	case st.State == string(runstate.StateReady) && (hs == "" || hs == string(health.Healthy)):
		out = append(out, cond(CondReady, true, "Ready", ""))
	default:
		out = append(out, cond(CondReady, false, reasonOf(st, hs), st.LastError))
	}
	reconciling := st.Enabled && (st.State == string(runstate.StatePending) || st.State == string(runstate.StateRunning) || hs == string(health.Progressing))
	out = append(out, cond(CondReconciling, reconciling, reasonOr(reconciling, st.State, "Idle"), ""))
	stalled := st.Enabled && (st.State == string(runstate.StateFailed) || hs == string(health.Degraded))
	msg := ""
	if stalled {
		msg = st.LastError
		if msg == "" && st.Health != nil {
			msg = st.Health.Message
		}
	}
	out = append(out, cond(CondStalled, stalled, reasonOr(stalled, reasonOf(st, hs), "NotStalled"), msg))
	switch hs {
	case "":
		out = append(out, metav1.Condition{Type: CondHealthy, Status: metav1.ConditionUnknown, Reason: "NotTracked"})
	case string(health.Healthy):
		out = append(out, cond(CondHealthy, true, hs, ""))
	case string(health.Unknown):
		out = append(out, metav1.Condition{Type: CondHealthy, Status: metav1.ConditionUnknown, Reason: hs, Message: st.Health.Message})
	default:
		out = append(out, cond(CondHealthy, false, hs, st.Health.Message))
	}
	drifted := st.Drift > 0
	dmsg := ""
	if drifted {
		dmsg = fmt.Sprintf("%d objects drifted", st.Drift)
	}
	out = append(out, cond(CondDrifted, drifted, reasonOr(drifted, "Drifted", "InSync"), dmsg))
	return out
}

// reasonOf is why a module is not Ready, in a word.
func reasonOf(st Status, hs string) string {
	switch {
	case st.Reason != "":
		return st.Reason
	case st.State == string(runstate.StateReady) && hs != "":
		return hs
	default:
		return st.State
	}
}

func reasonOr(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// oneLine is s's first line, trimmed (a condition message, a column).
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	const max = 300
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// carry keeps each condition's lastTransitionTime from old where its
// status did not change, and sets now where it did; observedGeneration is
// gen on the status and on each condition.
func carry(st *Status, old *Status, gen int64, now metav1.Time) {
	st.observe(gen)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.LastTransitionTime = now
		if old == nil {
			continue
		}
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
}

// observe sets gen as the generation the status and its conditions saw.
func (st *Status) observe(gen int64) {
	st.ObservedGeneration = gen
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = gen
	}
}
