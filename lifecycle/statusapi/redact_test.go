package statusapi

import (
	"strings"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/values"
)

// With a Redactor, every answer that may show values hides the secret
// ones: the values documents by key path (a short value too), the rest as
// text, JSON kept valid.
func TestRedactedAnswers(t *testing.T) {
	t.Parallel()
	opts := options(t)
	secretCM := map[string]string{"web": "size: 3\n", "global": "tier: prod\n"}
	sens, err := values.SensitiveFromData(map[string]string{"web": "size: 3\n"})
	if err != nil {
		t.Fatal(err)
	}
	red := values.NewRedactor()
	red.Add(sens, secretCM)
	red.Add(mustSensitive(t, map[string]string{"web": "password: x\n"}), map[string]string{"web": "password: " + secretValue + "\n"})
	opts.Redactor = red
	opts.Modules.(*runstate.Modules).Update("web", func(st *runstate.Module) { st.LastError = "helm: cannot use " + secretValue })
	h := New(opts).Handler()
	for _, c := range []struct {
		path       string
		want, hide []string
	}{
		{"/status", []string{"cannot use <redacted>"}, []string{secretValue}},
		{"/debug/modules/web/values", []string{`"password": "<redacted>"`, `"size": "<redacted>"`}, []string{secretValue, `"size": 3`}},
		{"/debug/modules/web/config?global=true", []string{`"size": "<redacted>"`, `"tier": "prod"`}, []string{`"size": 3`}},
		{"/debug/modules", []string{`"lastError": "helm: cannot use <redacted>"`}, []string{secretValue}},
	} {
		code, body := getLocal(t, h, c.path)
		if code != 200 {
			t.Errorf("%s: %d %s", c.path, code, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %q missing in\n%s", c.path, w, body)
			}
		}
		for _, s := range c.hide {
			if strings.Contains(body, s) {
				t.Errorf("%s: %q shows in\n%s", c.path, s, body)
			}
		}
	}
}

func mustSensitive(t *testing.T, data map[string]string) values.Sensitive {
	t.Helper()
	s, err := values.SensitiveFromData(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
