// Package queue owns the task queues: named FIFO queues with one worker
// each, the "main" queue, retries with exponential backoff, allowFailure,
// compaction of consecutive tasks for one hook and binding, pre-emption (a
// change goes ahead of a failing task and drops the work it supersedes),
// the dump behind /queue and the queue metrics.
package queue
