package lifecycle

import (
	"testing"
)

// Defaults nested in a defaulted object, and the items defaults of each
// element of a list, reach a module's hooks and its chart, as in the
// original; a config-values.yaml default object takes the ConfigMap's keys
// in.
func TestCompatNestedDefaults(t *testing.T) {
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
	e := setup(t, files, map[string]string{"defaults": "limits: {cpu: 5}\n"})
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
