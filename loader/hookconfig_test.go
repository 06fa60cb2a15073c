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
		{name: "validating: shell-operator's example", in: `{"configVersion":"v1","kubernetes":[{"name":"crs","kind":"CronTab"}],"kubernetesValidating":[{"name":"private-repo-policy.example.com","includeSnapshotsFrom":["crs"],"group":"g","labelSelector":{"matchLabels":{"a":"b"}},"namespace":{"labelSelector":{"matchExpressions":[{"key":"env","operator":"In","values":["prod"]}]}},"rules":[{"apiGroups":["stable.example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["crontabs"],"scope":"Namespaced"}],"failurePolicy":"Ignore","sideEffects":"NoneOnDryRun","timeoutSeconds":2,"matchConditions":[{"name":"not-me","expression":"true"}]}]}`,
			check: func(t *testing.T, c *HookConfig) {
				a := c.Admission[0]
				if a.Mutating || a.FailurePolicy != "Ignore" || a.SideEffects != "NoneOnDryRun" || a.TimeoutSeconds != 2 || a.NamespaceSelector == nil || a.LabelSelector == nil || len(a.MatchConditions) != 1 || !c.HasWebhooks() {
					t.Fatalf("admission = %+v", a)
				}
			}},
		{name: "validating defaults", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["*"],"resources":["configmaps"]}]}]}`,
			check: func(t *testing.T, c *HookConfig) {
				if a := c.Admission[0]; a.FailurePolicy != "Fail" || a.SideEffects != "None" || a.TimeoutSeconds != 10 {
					t.Fatalf("admission = %+v", a)
				}
			}},
		{name: "mutating", in: `{"configVersion":"v1","kubernetesMutating":[{"name":"m.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods"]}]}]}`,
			check: func(t *testing.T, c *HookConfig) {
				if !c.Admission[0].Mutating {
					t.Fatal("not mutating")
				}
			}},
		{name: "webhook name of two segments", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["*"],"resources":["pods"]}]}]}`, wantErr: "at least three segments"},
		{name: "webhook without rules", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com"}]}`, wantErr: "at least one rule"},
		{name: "webhook bad operation", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["PATCH"],"resources":["pods"]}]}]}`, wantErr: `operation "PATCH"`},
		{name: "webhook bad failurePolicy", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com","failurePolicy":"Retry","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["*"],"resources":["pods"]}]}]}`, wantErr: "failurePolicy"},
		{name: "webhook timeout over 30", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com","timeoutSeconds":31,"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["*"],"resources":["pods"]}]}]}`, wantErr: "timeoutSeconds 31"},
		{name: "webhook unknown field", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com","objectSelector":{}}]}`, wantErr: `unknown field "objectSelector"`},
		{name: "webhook names an unknown snapshot", in: `{"configVersion":"v1","kubernetesValidating":[{"name":"a.example.com","includeSnapshotsFrom":["nope"],"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["*"],"resources":["pods"]}]}]}`, wantErr: `includeSnapshotsFrom names "nope"`},
		{name: "webhooks are v1 only", in: `{"kubernetesValidating":[{"name":"a.example.com"}]}`, wantErr: "configVersion: v1"},
		{name: "conversion", in: `{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"conversions","crdName":"crontabs.stable.example.com","conversions":[{"fromVersion":"unstable.crontab.io/v1beta1","toVersion":"stable.example.com/v1beta1"},{"fromVersion":"v1beta2","toVersion":"v1"}]}]}`,
			check: func(t *testing.T, c *HookConfig) {
				if v := c.Conversion[0]; v.CRDName != "crontabs.stable.example.com" || len(v.Conversions) != 2 || v.Conversions[1].ToVersion != "v1" {
					t.Fatalf("conversion = %+v", v)
				}
			}},
		{name: "conversion without crdName", in: `{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"c","conversions":[{"fromVersion":"v1","toVersion":"v2"}]}]}`, wantErr: "crdName"},
		{name: "conversion without conversions", in: `{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"c","crdName":"a.b.c"}]}`, wantErr: "conversions"},
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
