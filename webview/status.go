package webview

import "time"

// The parts of /status the pages show, decoded from its JSON (the shapes
// of statusapi.Status and the git source's status). A field /status does
// not have stays empty: the pages say "unknown", never fail.

type status struct {
	Ready       bool     `json:"ready"`
	Revision    string   `json:"revision"`
	TreeError   string   `json:"treeError"`
	TreeReason  string   `json:"treeReason"`
	PurgeError  string   `json:"purgeError"`
	ConfigFiles []string `json:"configFiles"`
	// ConfigDrift: values ConfigMap values the config in git replaces
	ConfigDrift []configDrift `json:"configDrift"`
	Modules     []module      `json:"modules"`
	Queues      []queue       `json:"queues"`
	Source      *source       `json:"source"`
	Leader      *leader       `json:"leaderElection"`
}

type module struct {
	Name           string     `json:"name"`
	Enabled        bool       `json:"enabled"`
	State          string     `json:"state"`
	LastError      string     `json:"lastError"`
	Reason         string     `json:"reason"`
	Health         *health    `json:"health"`
	Drift          *drift     `json:"drift"`
	DisabledReason string     `json:"disabledReason"`
	Readiness      *readiness `json:"readiness"`
	// Weight is the module's weight when cmd gave Options.Weights (-1
	// when unknown: the row keeps /status's order, which is by weight).
	Weight int `json:"-"`
}

type health struct {
	Status   string         `json:"status"`
	Message  string         `json:"message"`
	Objects  []objectHealth `json:"objects"`
	Total    int            `json:"total"`
	Revision int            `json:"revision"`
	Since    time.Time      `json:"since"`
}

type objectHealth struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	Health    string `json:"health"`
	Message   string `json:"message"`
}

type drift struct {
	Mode    string        `json:"mode"`
	Objects []driftObject `json:"objects"`
}

type driftObject struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Name       string   `json:"name"`
	Fields     []string `json:"fields"`
	Ignored    []string `json:"ignored"`
}

type readiness struct {
	Ready   bool      `json:"ready"`
	Message string    `json:"message"`
	Error   string    `json:"error"`
	Checked time.Time `json:"checked"`
}

type queue struct {
	Name  string `json:"name"`
	Tasks []task `json:"tasks"`
}

type task struct {
	ID          uint64     `json:"id"`
	Kind        string     `json:"kind"`
	Description string     `json:"description"`
	Running     bool       `json:"running"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"lastError"`
	QueuedAt    time.Time  `json:"queuedAt"`
	Held        string     `json:"held"`
	HeldSince   *time.Time `json:"heldSince"`
}

type source struct {
	URL        string     `json:"url"`
	DesiredRef string     `json:"desiredRef"`
	Current    *revision  `json:"current"`
	LastSync   time.Time  `json:"lastSync"`
	LastError  string     `json:"lastError"`
	History    []revision `json:"history"`
	// Suspended while the source is suspended; Pending the newer
	// revision held back, Held who holds it
	Suspended *suspended `json:"suspended"`
	Pending   *revision  `json:"pending"`
	Held      []hold     `json:"held"`
}

type suspended struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	By     string    `json:"by"`
}

type hold struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Commit string    `json:"commit"`
}

type configDrift struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	File string `json:"file"`
}

type revision struct {
	Commit    string    `json:"commit"`
	Ref       string    `json:"ref"`
	Subject   string    `json:"subject"`
	Author    string    `json:"author"`
	Time      time.Time `json:"time"`
	AppliedAt time.Time `json:"appliedAt"`
}

type leader struct {
	Lease    string `json:"lease"`
	Identity string `json:"identity"`
	Leader   string `json:"leader"`
	Leading  bool   `json:"leading"`
}

// module finds a module by name.
func (s *status) module(name string) (module, bool) {
	for _, m := range s.Modules {
		if m.Name == name {
			return m, true
		}
	}
	return module{}, false
}

// Tasks counts the tasks of every queue.
func (s *status) Tasks() int {
	n := 0
	for _, q := range s.Queues {
		n += len(q.Tasks)
	}
	return n
}

// Drifted is how many objects differ from the chart.
func (m module) Drifted() int {
	if m.Drift == nil {
		return 0
	}
	return len(m.Drift.Objects)
}

// Counts are the overview's numbers: modules by health, drifted ones.
func (s *status) Counts() map[string]int {
	c := map[string]int{}
	for _, m := range s.Modules {
		if m.Health != nil {
			c[m.Health.Status]++
		}
		if m.Drifted() > 0 {
			c["Drifted"]++
		}
		if m.LastError != "" {
			c["Errors"]++
		}
	}
	return c
}
