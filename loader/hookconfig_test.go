package loader

import (
	"slices"
	"strings"
	"testing"
)

// The fields and aliases the original's v0 and v1 structs accept load
// here too, with the original's meaning; anything else is refused by name.
func TestHookConfigCompat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		global  bool
		wantErr string
		check   func(t *testing.T, c *HookConfig)
	}{
		{name: "v1 watchEvent alias", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","watchEvent":["Deleted"]}]}`,
			check: func(t *testing.T, c *HookConfig) { wantEvents(t, c, EventDeleted) }},
		{name: "executeHookOnEvent wins over watchEvent", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","watchEvent":["Deleted"],"executeHookOnEvent":["Added"]}]}`,
			check: func(t *testing.T, c *HookConfig) { wantEvents(t, c, EventAdded) }},
		{name: "empty executeHookOnEvent means no events", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","executeHookOnEvent":[]}]}`,
			check: func(t *testing.T, c *HookConfig) { wantEvents(t, c) }},
		{name: "empty watchEvent means no events", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","watchEvent":[]}]}`,
			check: func(t *testing.T, c *HookConfig) { wantEvents(t, c) }},
		{name: "no event list means all", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod"}]}`,
			check: func(t *testing.T, c *HookConfig) { wantEvents(t, c, EventAdded, EventModified, EventDeleted) }},
		{name: "bad watchEvent", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","watchEvent":["Gone"]}]}`, wantErr: `watchEvent "Gone"`},
		{name: "resynchronizationPeriod", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","resynchronizationPeriod":"5m"}]}`},
		{name: "booleans as strings", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","queue":"q","executeHookOnSynchronization":"false","waitForSynchronization":"false","keepFullObjectsInMemory":"false"}]}`,
			check: func(t *testing.T, c *HookConfig) {
				b := c.Kubernetes[0]
				if b.ExecuteHookOnSynchronization || b.WaitForSynchronization || b.KeepFullObjectsInMemory {
					t.Fatalf("binding = %+v", b)
				}
			}},
		{name: "bad boolean", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","keepFullObjectsInMemory":"no"}]}`, wantErr: "want true or false"},
		{name: "waitForSynchronization false needs a queue", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","waitForSynchronization":false}]}`,
			check: func(t *testing.T, c *HookConfig) {
				if !c.Kubernetes[0].WaitForSynchronization {
					t.Fatal("waitForSynchronization: false took effect without a queue")
				}
			}},
		{name: "unknown v1 field", in: `{"configVersion":"v1","kubernetes":[{"kind":"Pod","mode":"v0"}]}`, wantErr: `unknown field "mode"`},
		{name: "settings", in: `{"configVersion":"v1","settings":{"executionMinInterval":"3s","executionBurst":2}}`},
		{name: "bad settings", in: `{"configVersion":"v1","settings":{"executionMinInterval":"often"}}`, wantErr: "executionMinInterval"},
		{name: "unknown settings field", in: `{"configVersion":"v1","settings":{"burst":2}}`, wantErr: `unknown field "burst"`},
		{name: "settings are v1 only", in: `{"settings":{"executionBurst":2}}`, wantErr: `unknown binding "settings"`},
		{name: "webhooks", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"x"}]}`, wantErr: "webhooks are not supported"},
		{name: "v0 objectName", in: `{"onKubernetesEvent":[{"kind":"configmap","objectName":"one"}]}`,
			check: func(t *testing.T, c *HookConfig) {
				if !slices.Equal(c.Kubernetes[0].NameSelector, []string{"one"}) {
					t.Fatalf("nameSelector = %v", c.Kubernetes[0].NameSelector)
				}
			}},
		{name: "v0 documented fields", in: `{"onKubernetesEvent":[{"name":"n","kind":"pod","event":["add"],"selector":{"matchExpressions":[{"key":"a","operation":"Exists"}]},"namespaceSelector":{"any":true},"jqFilter":".metadata","allowFailure":true,"disableDebug":true}]}`},
		{name: "v0 has no Synchronization", in: `{"onKubernetesEvent":[{"kind":"pod"}]}`,
			check: func(t *testing.T, c *HookConfig) {
				if b := c.Kubernetes[0]; b.ExecuteHookOnSynchronization || !b.V0 {
					t.Fatalf("binding = %+v", b)
				}
			}},
		{name: "unknown v0 field", in: `{"onKubernetesEvent":[{"kind":"pod","objectNames":["a"]}]}`, wantErr: `unknown field "objectNames"`},
		{name: "beforeDeleteHelm", in: `{"configVersion":"v1","beforeDeleteHelm":10,"afterDeleteHelm":5}`,
			check: func(t *testing.T, c *HookConfig) {
				if o, ok := c.Order(BeforeDeleteHelm); !ok || o != 10 {
					t.Fatalf("Order(beforeDeleteHelm) = %v, %v", o, ok)
				}
			}},
		{name: "beforeDeleteHelm in a global hook", in: `{"beforeDeleteHelm":10}`, global: true, wantErr: `"beforeDeleteHelm" is for module hooks only`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseHookConfig([]byte(tt.in), tt.global)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func wantEvents(t *testing.T, c *HookConfig, want ...string) {
	t.Helper()
	got := c.Kubernetes[0].ExecuteHookOnEvent
	if got == nil || !slices.Equal(got, append([]string{}, want...)) {
		t.Fatalf("executeHookOnEvent = %#v, want %v", got, want)
	}
}
