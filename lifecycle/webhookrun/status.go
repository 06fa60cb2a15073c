package webhookrun

import (
	"context"

	"github.com/addonops/addon-operator/webhook"
)

// Registrar writes the configuration objects of the running tree's
// webhooks (docs/operator.md, "Validating and conversion webhooks").
type Registrar interface {
	Apply(ctx context.Context, b webhook.Bindings) error
	// Serves says whether the server of that kind is configured (its
	// certificate given).
	Serves(kind webhook.Kind) bool
	// Registered is what is registered now (webhook.RegisteredKey values):
	// after a restart, what the last run left.
	Registered(ctx context.Context) (map[string]bool, error)
}

// Listener is a Registrar that also runs the webhook servers (cmd's):
// Listen starts the servers of the kinds the tree binds and returns once
// they answer, whatever is registered, so that a request the last run's
// registration sends after a restart finds a server.
type Listener interface {
	Listen(ctx context.Context, kinds []webhook.Kind) error
}

var _ Registrar = (*webhook.Registrar)(nil)

// Status is the /status view of the webhooks.
type Status struct {
	Bindings []BindingStatus `json:"bindings"`
	// Error is the last registration's error ("" once it succeeded).
	Error string `json:"error,omitempty"`
}

// BindingStatus is one webhook binding of the running tree.
type BindingStatus struct {
	Kind   webhook.Kind `json:"kind"`
	Name   string       `json:"name"`
	Hook   string       `json:"hook"`
	Module string       `json:"module,omitempty"`
	// CRD is a conversion binding's CRD.
	CRD   string `json:"crd,omitempty"`
	Error string `json:"error,omitempty"`
}
