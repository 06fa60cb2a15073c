// Package executor runs hook and enabled-script processes: each in its own
// process group, killed as a whole on timeout or cancel and, in any case,
// once the process has exited, so no child outlives its hook; stderr (and
// stdout unless captured) logged line by line with the hook's name, each
// line and captured stdout bounded to a head and a tail; and an
// environment that holds the documented variables plus the operator's own
// minus its credential settings; a `#!/usr/bin/env NAME` script started as
// NAME in env's place (shebang.go). ReadResultFile reads back, bounded, a
// file a hook hands back. ReapOrphans reaps what the kernel re-parents to
// an operator that runs as PID 1, and only that.
//
// The package is Linux-only: it relies on waitid(2), process groups and
// the parent-death signal.
package executor
