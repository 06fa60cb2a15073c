package hookmetrics

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The default bounds of one budget (Limits).
const (
	// DefaultLimit is the number of series one budget may hold.
	DefaultLimit = 1000
	// DefaultBytes is what one budget's series may take: their names,
	// label names and values, groups and histogram buckets (seriesCost).
	DefaultBytes = 1 << 20
)

// Limits bound what one budget holds; <= 0: the default.
type Limits struct {
	Series int
	Bytes  int
}

// Owner is the hook an operation came from; its Hook and Module become
// the series' hook and module labels (Module is "" for a global hook and
// then no module label is added). Budget names what its series count
// against: the hook's executable, so that a batch executable's hooks share
// one budget, and renaming a hook in its config does not give it a fresh
// one ("": the module and hook).
type Owner struct{ Module, Hook, Budget string }

// group is the owner's own group: operations written without one belong
// to it, as in shell-operator, where the hook's name is the default group.
// Module and hook both key it, so same-named hooks of two modules do not
// expire each other's series; it cannot clash with a written group name.
func (o Owner) group() string { return "\x00" + o.Module + "\x00" + o.Hook }

// hook is the owner without its budget: what Retain keeps.
func (o Owner) hook() Hook { return Hook{Module: o.Module, Hook: o.Hook} }

func (o Owner) budget() string {
	if o.Budget != "" {
		return o.Budget
	}
	return o.group()
}

// Hook names a hook of the running tree (Retain).
type Hook struct{ Module, Hook string }

// usage is what one budget holds.
type usage struct{ series, bytes int }

// Store keeps the series hooks wrote. The zero value is not usable; use New.
type Store struct {
	limits Limits

	mu       sync.Mutex
	families map[string]*family
	used     map[string]*usage // by Owner.budget
	// present are the hooks of the running tree once Retain was called:
	// a run of a hook that left it applies nothing
	present map[Hook]bool
}

type family struct {
	kind    string // ActionAdd (counter), ActionSet (gauge) or ActionObserve (histogram)
	buckets []float64
	series  map[string]*series
}

type series struct {
	names, values []string // sorted label names and their values
	owner         Owner
	group         string
	cost          int      // seriesCost when made
	value         float64  // counter and gauge
	counts        []uint64 // histogram: per bucket, not cumulative
	count         uint64
	sum           float64
}

// New returns a Store with the bounds of each budget.
func New(l Limits) *Store {
	if l.Series <= 0 {
		l.Series = DefaultLimit
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultBytes
	}
	return &Store{limits: l, families: map[string]*family{}, used: map[string]*usage{}}
}

// seriesOverhead stands for the series' own structures and map entries,
// so that many tiny series count too.
const seriesOverhead = 128

// seriesCost is what a series takes, approximately: its strings are kept
// twice (its labels and its key) and a histogram keeps a count a bucket.
func seriesCost(metric, group string, names, values []string, buckets int) int {
	n := seriesOverhead + len(metric) + len(group) + 8*buckets
	for i := range names {
		n += 2 * (len(names[i]) + len(values[i]))
	}
	return n
}

var kindNames = map[string]string{ActionAdd: "counter", ActionSet: "gauge", ActionObserve: "histogram"}

// Check reports the first operation Apply would refuse, so that a run can
// fail before any of its patches is applied: a metric given another type
// than it has, or a name that collides with a histogram's _count, _sum or
// _bucket series (which would fail every scrape of /metrics/hooks).
func (s *Store) Check(ops []Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.check(ops)
}

var histogramSuffixes = []string{"_count", "_sum", "_bucket"}

func (s *Store) check(ops []Op) error {
	kinds := map[string]string{}
	kindOf := func(name string) string {
		if k := kinds[name]; k != "" {
			return k
		}
		if f := s.families[name]; f != nil {
			return f.kind
		}
		return ""
	}
	for _, op := range ops {
		if op.Action == ActionExpire {
			continue
		}
		if kind := kindOf(op.Name); kind != "" && kind != op.Action {
			return fmt.Errorf("line %d: %s is a %s, %q makes a %s", op.Line, op.Name, kindNames[kind], op.Action, kindNames[op.Action])
		}
		kinds[op.Name] = op.Action
		for _, sfx := range histogramSuffixes {
			if op.Action == ActionObserve && kindOf(op.Name+sfx) != "" {
				return fmt.Errorf("line %d: histogram %s would have the series %s%s, which is a metric of its own", op.Line, op.Name, op.Name, sfx)
			}
			if base, ok := strings.CutSuffix(op.Name, sfx); ok && kindOf(base) == ActionObserve {
				return fmt.Errorf("line %d: %s is a series of histogram %s", op.Line, op.Name, base)
			}
		}
	}
	return nil
}

// Apply applies one successful run's operations, as shell-operator does:
// operations are taken group by group (an operation without a group is in
// the hook's own group); each group named in the batch first loses every
// series it had, from any hook, then gets the batch's values, so a group
// holds what its last writer reported. A metric's type is fixed by its first
// operation; a later one of another type is an error naming its line and
// nothing of the batch is applied. dropped counts new series refused
// because the owner's budget is spent, or all of them when the hook has
// left the running tree (Retain).
func (s *Store) Apply(o Owner, ops []Op) (dropped int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ops); err != nil {
		return 0, err
	}
	if s.present != nil && !s.present[o.hook()] {
		return len(ops), nil
	}
	byGroup := map[string][]Op{}
	var groups []string
	for _, op := range ops {
		g := op.Group
		if g == "" {
			g = o.group()
		}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], op)
	}
	for _, g := range groups {
		s.expire(g)
		for _, op := range byGroup[g] {
			if op.Action == ActionExpire {
				s.expire(g)
				continue
			}
			if !s.apply(o, g, op) {
				dropped++
			}
		}
	}
	return dropped, nil
}

// apply records one operation; false when its new series is over the
// owner's budget.
func (s *Store) apply(o Owner, group string, op Op) bool {
	f := s.families[op.Name]
	if f == nil {
		f = &family{kind: op.Action, buckets: op.Buckets, series: map[string]*series{}}
		s.families[op.Name] = f
	}
	labels := maps.Clone(op.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	// ours win over the hook's, as in the original
	labels["hook"] = o.Hook
	delete(labels, "module")
	if o.Module != "" {
		labels["module"] = o.Module
	}
	// an empty value is an absent label to Prometheus
	maps.DeleteFunc(labels, func(_, v string) bool { return v == "" })
	names := slices.Sorted(maps.Keys(labels))
	values := make([]string, len(names))
	var key strings.Builder
	for i, n := range names {
		values[i] = labels[n]
		fmt.Fprintf(&key, "%q=%q,", n, values[i])
	}
	sr := f.series[key.String()]
	if sr == nil {
		cost := seriesCost(op.Name, group, names, values, len(f.buckets))
		u := s.used[o.budget()]
		if u == nil {
			u = &usage{}
		}
		if u.series >= s.limits.Series || u.bytes+cost > s.limits.Bytes {
			if len(f.series) == 0 {
				delete(s.families, op.Name)
			}
			return false
		}
		sr = &series{names: names, values: values, owner: o, group: group, cost: cost}
		if f.kind == ActionObserve {
			sr.counts = make([]uint64, len(f.buckets))
		}
		f.series[key.String()] = sr
		u.series++
		u.bytes += cost
		s.used[o.budget()] = u
	}
	if sr.group != group {
		// the group's name is part of the cost: charge the difference
		u := s.used[sr.owner.budget()]
		u.bytes += len(group) - len(sr.group)
		sr.cost += len(group) - len(sr.group)
	}
	sr.group = group
	switch f.kind {
	case ActionAdd:
		sr.value += op.Value
	case ActionSet:
		sr.value = op.Value
	case ActionObserve:
		// the family's first buckets count; later ones are ignored
		if i := sort.SearchFloat64s(f.buckets, op.Value); i < len(f.buckets) {
			sr.counts[i]++
		}
		sr.count++
		sr.sum += op.Value
	}
	return true
}

// expire drops every series of group g.
func (s *Store) expire(g string) {
	s.drop(func(sr *series) bool { return sr.group == g })
}

// drop removes the series gone says are, and returns how many.
func (s *Store) drop(gone func(*series) bool) int {
	n := 0
	for name, f := range s.families {
		for k, sr := range f.series {
			if !gone(sr) {
				continue
			}
			delete(f.series, k)
			n++
			b := sr.owner.budget()
			if u := s.used[b]; u != nil {
				if u.series--; u.series <= 0 {
					delete(s.used, b)
				} else {
					u.bytes -= sr.cost
				}
			}
		}
		if len(f.series) == 0 {
			delete(s.families, name)
		}
	}
	return n
}

// Retain drops the series of every hook that is not in hooks, the hooks
// of the running tree, and refuses their later runs' operations (a run
// of the old tree that ends after the change), until a Retain names them
// again. It returns how many series were dropped.
func (s *Store) Retain(hooks []Hook) int {
	present := make(map[Hook]bool, len(hooks))
	for _, h := range hooks {
		present[h] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.present = present
	return s.drop(func(sr *series) bool { return !present[sr.owner.hook()] })
}

// Series is how many series the store holds.
func (s *Store) Series() int { n, _ := s.usage(); return n }

// Bytes is what the store's series take (seriesCost summed).
func (s *Store) Bytes() int { _, b := s.usage(); return b }

// usage sums the budgets' use.
func (s *Store) usage() (series, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.used {
		series += u.series
		bytes += u.bytes
	}
	return series, bytes
}

// Describe sends nothing: the store is an unchecked collector, its metrics
// are whatever hooks wrote.
func (s *Store) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series; the help text is the metric's name, as in
// shell-operator.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, f := range s.families {
		for _, sr := range f.series {
			desc := prometheus.NewDesc(name, name, sr.names, nil)
			switch f.kind {
			case ActionAdd:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, sr.value, sr.values...)
			case ActionSet:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, sr.value, sr.values...)
			case ActionObserve:
				cum := make(map[float64]uint64, len(f.buckets))
				var n uint64
				for i, b := range f.buckets {
					n += sr.counts[i]
					cum[b] = n
				}
				ch <- prometheus.MustNewConstHistogram(desc, sr.count, sr.sum, cum, sr.values...)
			}
		}
	}
}
