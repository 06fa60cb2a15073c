// Package rollout owns the fleet gate (docs/operator.md, "Fleets"): for
// one candidate revision, fetched and checked, whether this cluster
// applies it now or keeps running its current revision, and why. It
// composes the ring gate (ring.Policy.Decide over the commit's statuses
// read from the forge through a Lister, commitstatus.ReadCache in the
// operator), the change windows (changewindow.Set.Decide), a commit let
// through by `source apply-now`, the broken-cluster rule (a cluster whose
// running revision is failed or degraded is held by neither rings nor
// windows, so a fix reaches it) and the rollback rule (a rollback is not
// held by rings unless rollout.holdRollbacks says so; windows hold it).
//
// The policy in force is the running revision's, not the candidate's: a
// commit cannot lift its own hold (by moving itself to ring 0 or deleting
// a deny window); its policy takes effect once it is applied. Policies
// are parsed when a revision is checked (Parse, from the config in git's
// `addon-operator:` sections) and remembered by commit (Gate.Learn).
//
// It imports ring, changewindow, commitstatus and gitsync (types only),
// never lifecycle or cmd; the clock is injected.
package rollout
