// Package queue owns the task queues: named FIFO queues with one worker
// each, the "main" queue, retries with exponential backoff, terminal errors
// that drop a task instead and held tasks that wait for a wake without
// failing (errors.go), allowFailure, merging of a task
// into the one waiting at the tail, pre-emption (a change goes ahead of a
// failing task and drops the work it supersedes, found by key wherever it
// waits, as a task or a member of one), the dump behind /queue and the
// queue metrics. A task's Key (kind + module, or kind + hook + binding) is
// what superseding and merging compare; its Payload is its kind's typed
// data.
package queue
