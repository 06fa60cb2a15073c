package lifecycle

import (
	"context"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults nested in a defaulted object, and the items defaults of each
// element of a list, reach a module's hooks and its chart, as in the
// original; a config-values.yaml default object takes the ConfigMap's keys
// in.
func TestCompatNestedDefaults(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml":              "global: {}\ndefaultsEnabled: true\n",
		"modules/001-defaults/values.yaml": "defaults:\n  ports: [{name: a}, {name: b, port: 81}]\n",
		"modules/001-defaults/openapi/config-values.yaml": `
type: object
properties:
  limits:
    type: object
    default: {cpu: 1, memory: 2}
    properties:
      cpu: {type: integer}
      memory: {type: integer}
  ports:
    type: array
    items:
      type: object
      properties:
        name: {type: string}
        port: {type: integer, default: 80}
`,
		"modules/001-defaults/openapi/values.yaml": `
x-extend: {schema: config-values.yaml}
type: object
properties:
  internal:
    type: object
    default: {}
    properties:
      token: {type: string, default: none}
      tls:
        type: object
        default: {}
        properties:
          enabled: {type: boolean, default: true}
`,
		"modules/001-defaults/hooks/h.sh": recordingHook("h", `{"configVersion":"v1","beforeHelm":1}`, ""),
	}, withPrefix("modules/001-defaults", moduleChart("defaults", "defaults")))
	e := parallelSetup(t, files, map[string]string{"defaults": "limits: {cpu: 5}\n"})
	e.start()
	e.waitReady()
	want := `{"limits":{"cpu":5,"memory":2},"ports":[{"name":"a","port":80},{"name":"b","port":81}],"internal":{"token":"none","tls":{"enabled":true}}}`
	assertJSON(t, e.releaseValues("defaults"), want)
	recs := e.readRecords()
	if len(recs) != 1 {
		t.Fatalf("records = %v", e.sequence())
	}
	assertJSON(t, recs[0].Values["defaults"], want)
	assertJSON(t, recs[0].Config["defaults"], `{"limits":{"cpu":5}}`)
}

// A chart reads global.enabledModules, as Deckhouse's charts and helm_lib
// do: every enabled module in run order, the list hooks get, through real
// Helm (the release's ConfigMap) and the module's render on /debug.
func TestChartGetsEnabledModules(t *testing.T) {
	t.Parallel()
	chart := func(name string) map[string]string {
		return map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-enabled\ndata:\n" +
				"  list: {{ .Values.global.enabledModules | join \",\" | quote }}\n" +
				"  hasSecond: {{ has \"second\" .Values.global.enabledModules | quote }}\n",
		}
	}
	files := merged(map[string]string{
		"modules/values.yaml":           "global: {}\nfirstEnabled: true\nsecondEnabled: true\nthirdEnabled: false\n",
		"modules/001-first/values.yaml": "first: {}\n", "modules/002-second/values.yaml": "second: {}\n",
		"modules/003-third/values.yaml": "third: {}\n",
	}, withPrefix("modules/001-first", chart("first")), withPrefix("modules/002-second", chart("second")),
		withPrefix("modules/003-third", chart("third")))
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()
	for _, name := range []string{"first", "second"} {
		cm, err := client.CoreV1().ConfigMaps(e.ns).Get(context.Background(), name+"-enabled", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s's release ConfigMap: %v", name, err)
		}
		if cm.Data["list"] != "first,second" || cm.Data["hasSecond"] != "true" {
			t.Fatalf("%s's chart got global.enabledModules %q (has second: %q), want \"first,second\"", name, cm.Data["list"], cm.Data["hasSecond"])
		}
	}
	code, out := serveHandler(t, e.op.Handler(HTTPOptions{Namespace: e.ns}))("/debug/modules/first/render")
	if code != http.StatusOK || !strings.Contains(out, `list: "first,second"`) {
		t.Fatalf("debug render: %d\n%s", code, out)
	}
}
