package values

import (
	"strings"
	"testing"
)

// The sources of the enable flag in order (docs/lifecycle.md, step 4), as
// the original's discovery examples use them, and a section that is the
// literal false.
func TestEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		common string
		own    string
		cm     map[string]string
		want   bool
	}{
		{name: "default is false"},
		{name: "common true", common: "nginxIngressEnabled: true", want: true},
		{name: "own values.yaml overrides common", common: "nginxIngressEnabled: true", own: "nginxIngressEnabled: false"},
		{name: "ConfigMap overrides files", common: "nginxIngressEnabled: false", cm: map[string]string{"nginxIngressEnabled": "true"}, want: true},
		{name: "ConfigMap false wins", own: "nginxIngressEnabled: true", cm: map[string]string{"nginxIngressEnabled": "false"}},
		{name: "ConfigMap section false disables", common: "nginxIngressEnabled: true", cm: map[string]string{"nginxIngress": "false"}},
		{name: "values.yaml section false disables", common: "nginxIngressEnabled: true", own: "nginxIngress: false"},
		{name: "quoted string true counts", cm: map[string]string{"nginxIngressEnabled": `"true"`}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _, err := NewStore(Source{
				Common:  mustParse(t, tt.common),
				Modules: []ModuleSource{{Name: "nginx-ingress", Values: mustParse(t, tt.own)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if tt.cm != nil {
				if _, err := store.SetConfig(tt.cm); err != nil {
					t.Fatal(err)
				}
			}
			if got := store.Enabled("nginxIngress"); got != tt.want {
				t.Fatalf("Enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	_, _, err := NewStore(Source{CommonFile: "modules/values.yaml", Common: mustParse(t, "oneEnabled: yes-please"), Modules: []ModuleSource{{Name: "one"}}})
	if err == nil || !strings.Contains(err.Error(), "modules/values.yaml: oneEnabled: want true or false") {
		t.Fatalf("err = %v", err)
	}
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.SetConfig(map[string]string{"oneEnabled": "[1]", "global": "a: [", "one": "x: 1"})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap key oneEnabled: want true or false") || !strings.Contains(err.Error(), "ConfigMap key global") {
		t.Fatalf("err = %v", err)
	}
	if v := store.ModuleConfigValues("one"); v["one"] != nil {
		t.Fatalf("bad config was adopted: %v", v)
	}
}
