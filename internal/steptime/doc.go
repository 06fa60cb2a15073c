// Package steptime times the steps of one module run by wall clock
// (docs/performance.md, "Where a module run's time goes"): the run puts a
// Clock in its context, and each layer it calls (the hook runner, Helm)
// marks the end of its steps with Mark. A step's time is the time since
// the previous mark, so the steps of one run add up to the whole run and
// code between two marks counts in the later one.
//
// A Mark costs one time.Now and one histogram observation; without a Clock
// in the context it costs a context lookup. While an execution trace is
// being taken (/debug/pprof/trace), each mark is also a trace log event of
// category "step", so a trace shows where each module run's steps ended.
//
// It imports nothing of ours: every layer may mark steps.
package steptime
