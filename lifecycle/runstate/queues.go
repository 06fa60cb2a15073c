package runstate

import (
	"sync/atomic"

	"github.com/addonops/addon-operator/queue"
)

// Queues is the task queues, which Run creates (nil before).
type Queues struct{ p atomic.Pointer[queue.Set] }

// Get is the queues (nil before Run).
func (q *Queues) Get() *queue.Set { return q.p.Load() }

// Set publishes Run's queues.
func (q *Queues) Set(s *queue.Set) { q.p.Store(s) }

// Main is the "main" queue; only called once Run created the queues.
func (q *Queues) Main() *queue.Queue { return q.Get().Main() }
