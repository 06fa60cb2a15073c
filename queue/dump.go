package queue

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"
)

// TaskInfo is one task in a dump.
type TaskInfo struct {
	ID          uint64    `json:"id"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Running     bool      `json:"running"`
	Attempts    int       `json:"attempts"`
	LastError   string    `json:"lastError,omitempty"`
	QueuedAt    time.Time `json:"queuedAt"`
	// Held is what a held task waits for (queue.WaitError), since
	// HeldSince.
	Held      string     `json:"held,omitempty"`
	HeldSince *time.Time `json:"heldSince,omitempty"`
}

// QueueInfo is one queue in a dump.
type QueueInfo struct {
	Name  string     `json:"name"`
	Tasks []TaskInfo `json:"tasks"`
}

// Dump lists every queue, "main" first, with its tasks in order.
func (s *Set) Dump() []QueueInfo {
	s.mu.Lock()
	qs := make([]*Queue, 0, len(s.queues))
	for _, q := range s.queues {
		qs = append(qs, q)
	}
	s.mu.Unlock()
	sort.Slice(qs, func(i, j int) bool {
		if (qs[i].name == MainQueue) != (qs[j].name == MainQueue) {
			return qs[i].name == MainQueue
		}
		return qs[i].name < qs[j].name
	})
	out := make([]QueueInfo, 0, len(qs))
	for _, q := range qs {
		q.mu.Lock()
		info := QueueInfo{Name: q.name, Tasks: []TaskInfo{}}
		for _, t := range q.tasks {
			ti := TaskInfo{ID: t.id, Kind: string(t.Key.Kind), Description: t.Description,
				Running: t.running, Attempts: t.attempts, LastError: t.lastError, QueuedAt: t.queuedAt, Held: t.held}
			if t.held != "" {
				since := t.heldSince
				ti.HeldSince = &since
			}
			info.Tasks = append(info.Tasks, ti)
		}
		q.mu.Unlock()
		out = append(out, info)
	}
	return out
}

// WriteText writes the dump as text, one line per task.
func (s *Set) WriteText(w io.Writer) {
	for _, q := range s.Dump() {
		fmt.Fprintf(w, "Queue %q: %d task(s)\n", q.Name, len(q.Tasks))
		for i, t := range q.Tasks {
			state := "waiting"
			if t.Running {
				state = "running"
			}
			fmt.Fprintf(w, "  %d. [%s] %s: %s", i+1, state, t.Kind, t.Description)
			if t.Attempts > 0 {
				fmt.Fprintf(w, " (failed %d time(s): %s)", t.Attempts, t.LastError)
			}
			if t.Held != "" {
				fmt.Fprintf(w, " (held since %s: %s)", t.HeldSince.UTC().Format(time.RFC3339), t.Held)
			}
			fmt.Fprintln(w)
		}
	}
}

// Handler serves the dump: text, or JSON with ?format=json.
func (s *Set) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") == "json" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"queues": s.Dump()})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		s.WriteText(w)
	})
}
