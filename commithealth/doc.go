// Package commithealth merges two streams into a revision's commit
// statuses: the lifecycle's revision states (applying, applied, failed)
// and the health tracker's module transitions. Once a revision is
// applied and every module's health has settled, its status turns
// healthy or degraded; each module's status follows its module's health
// (docs/operator.md, "Commit status"). It sits beside commitstatus, which
// posts the reports, so that commitstatus needs neither the health
// tracker nor the lifecycle.
package commithealth
