// Package executor runs hook and enabled-script processes: each in its own
// process group, with a timeout after which (or on cancel) the whole group
// is killed, stderr (and stdout unless captured) logged line by line with
// the hook's name, and an environment that holds the documented variables
// plus the operator's own minus its credential settings.
package executor
