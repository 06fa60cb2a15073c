package hookmetrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The actions of an operation.
const (
	ActionAdd     = "add"     // counter: add a non-negative value
	ActionSet     = "set"     // gauge: set the value
	ActionObserve = "observe" // histogram: observe a value, with buckets
	ActionExpire  = "expire"  // drop every series of the group
)

// Bounds of one operation, so that what the store keeps is bounded in
// bytes and not only in series (docs/operator.md, "Metrics from hooks"): a
// line past one fails the run, naming the line.
const (
	// MaxNameBytes bounds a metric's name, a label's name and a group's.
	MaxNameBytes = 256
	// MaxValueBytes bounds a label's value.
	MaxValueBytes = 1024
	// MaxLabels bounds the labels of one operation.
	MaxLabels = 32
	// MaxBuckets bounds a histogram's buckets.
	MaxBuckets = 100
)

// Op is one operation a hook wrote.
type Op struct {
	Name    string
	Action  string
	Value   float64
	Buckets []float64
	Labels  map[string]string
	// Group is "" for an operation without one: it then belongs to the
	// writing hook's own group (see Store.Apply).
	Group string
	// Line is the line the operation starts on, for errors.
	Line int
}

// line is the JSON form of an operation.
type line struct {
	Name    string            `json:"name"`
	Action  string            `json:"action"`
	Value   *float64          `json:"value"`
	Add     *float64          `json:"add"`
	Set     *float64          `json:"set"`
	Buckets []float64         `json:"buckets"`
	Labels  map[string]string `json:"labels"`
	Group   string            `json:"group"`
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Parse reads a METRICS_PATH file: JSON objects one after another (one a
// line is the documented form; the decoder, like shell-operator's, also
// takes them spread over lines). An error names the line of the bad
// operation.
func Parse(data []byte) ([]Op, error) {
	var ops []Op
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := skipSpace(data, int(dec.InputOffset()))
		var l line
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			return ops, nil
		}
		n := lineAt(data, start)
		if err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				n = lineAt(data, int(syn.Offset)-1)
			}
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		op, err := l.op()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		op.Line = n
		ops = append(ops, op)
	}
}

// op checks a line and resolves the shortcuts.
func (l line) op() (Op, error) {
	op := Op{Name: l.Name, Action: l.Action, Buckets: l.Buckets, Labels: l.Labels, Group: l.Group}
	if len(l.Group) > MaxNameBytes {
		return op, fmt.Errorf("group of %d bytes: at most %d", len(l.Group), MaxNameBytes)
	}
	if strings.ContainsFunc(l.Group, unicode.IsControl) {
		// a hook's own group is named with NULs (Owner.group): a written
		// group may not take its name
		return op, fmt.Errorf("group %q: control characters are not allowed", l.Group)
	}
	value := l.Value
	switch {
	case l.Add != nil && l.Set != nil:
		return op, errors.New(`"add" and "set" exclude each other`)
	case l.Add != nil:
		op.Action, value = ActionAdd, l.Add
	case l.Set != nil:
		op.Action, value = ActionSet, l.Set
	}
	switch op.Action {
	case "":
		return op, errors.New(`one of "action", "add" or "set" is required`)
	case ActionExpire:
		if op.Group == "" {
			return op, errors.New(`action "expire" needs a "group"`)
		}
		return op, nil
	case ActionAdd, ActionSet, ActionObserve:
	default:
		return op, fmt.Errorf("unknown action %q (want add, set, observe or expire)", op.Action)
	}
	if len(op.Name) > MaxNameBytes {
		return op, fmt.Errorf("metric name of %d bytes: at most %d", len(op.Name), MaxNameBytes)
	}
	if !metricName.MatchString(op.Name) {
		return op, fmt.Errorf("metric name %q is not a Prometheus metric name", op.Name)
	}
	if value == nil || math.IsNaN(*value) {
		return op, fmt.Errorf("%s: a numeric \"value\" is required", op.Name)
	}
	op.Value = *value
	if op.Action == ActionAdd && op.Value < 0 {
		return op, fmt.Errorf("%s: a counter cannot add %v", op.Name, op.Value)
	}
	if op.Action == ActionObserve {
		if len(op.Buckets) == 0 {
			return op, fmt.Errorf("%s: \"observe\" needs \"buckets\"", op.Name)
		}
		if len(op.Buckets) > MaxBuckets {
			return op, fmt.Errorf("%s: %d buckets: at most %d", op.Name, len(op.Buckets), MaxBuckets)
		}
		if !slices.IsSorted(op.Buckets) || slices.ContainsFunc(op.Buckets, func(b float64) bool { return math.IsNaN(b) || math.IsInf(b, 0) }) ||
			len(slices.Compact(slices.Clone(op.Buckets))) != len(op.Buckets) {
			return op, fmt.Errorf("%s: buckets must be finite and strictly increasing", op.Name)
		}
	}
	if len(op.Labels) > MaxLabels {
		return op, fmt.Errorf("%s: %d labels: at most %d", op.Name, len(op.Labels), MaxLabels)
	}
	for k, v := range op.Labels {
		if len(k) > MaxNameBytes {
			return op, fmt.Errorf("%s: a label name of %d bytes: at most %d", op.Name, len(k), MaxNameBytes)
		}
		if !labelName.MatchString(k) || strings.HasPrefix(k, "__") {
			return op, fmt.Errorf("%s: label name %q is not a Prometheus label name", op.Name, k)
		}
		if len(v) > MaxValueBytes {
			return op, fmt.Errorf("%s: label %s: a value of %d bytes: at most %d", op.Name, k, len(v), MaxValueBytes)
		}
	}
	return op, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && strings.ContainsRune(" \t\r\n", rune(data[i])) {
		i++
	}
	return i
}

// lineAt is the 1-based line of the byte at offset i.
func lineAt(data []byte, i int) int {
	i = min(max(i, 0), len(data))
	return 1 + bytes.Count(data[:i], []byte{'\n'})
}
