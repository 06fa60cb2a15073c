// Package taskkind is the one table of the operator's task kinds
// (docs/lifecycle.md, "Task kinds"): each kind's name as /queue shows it,
// the shape of its key, the kinds whose pre-emption drops it while it
// waits, and so whether a 'reload all modules' replaces it. Every part
// that queues tasks names its kind from here, and every question of the
// form "what does this change supersede" is answered by Superseding,
// which reads the table.
//
// It is a leaf: it imports queue (the Kind and Key types) and loader (the
// binding names) only; never lifecycle or its other sub-packages, so the
// steps, the bindings and drift can all import it.
package taskkind
