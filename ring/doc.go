// Package ring owns the ring gate of a fleet's rollout (docs/architecture.md,
// "Fleets (groundwork)"): whether this cluster, in ring k, may apply a
// commit, from the commit statuses the clusters of ring k-1 posted for it
// on the forge. Ring 0 always applies. Ring k applies once enough of ring
// k-1 (all, or a number) report the commit healthy and an optional soak
// time has passed since the last report it needed; it waits until then;
// a degraded or failed report from ring k-1 stops it.
//
// Membership: a cluster posts its ring in each status's description
// ("[ring 1] healthy on eu-1", commitstatus.Options.Ring) and its name in
// the context (addon-operator/<cluster>), so ring k-1 is, by default, the
// clusters whose statuses for the commit say they are in it. A policy may
// list ring k-1's clusters instead (Spec.Previous): then the list is the
// ring, a listed cluster that has posted nothing is waited for by name,
// and a need the list can never meet is an error at parse time. Without a
// list, "all" counts the clusters that have posted on the commit, so a
// cluster of ring k-1 that has not yet seen the commit is not waited for:
// list the ring where that matters.
//
// Package rollout wires it into the operator's gate; it imports the
// standard library and commitstatus (the statuses it reads, ParseOwn)
// alone.
package ring
