package lifecycle

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHookResultFilesBounded: a hook or enabled script that leaves a
// FIFO, a link or a huge file where the operator reads its result fails
// that run promptly, with an error naming it and the variable, in bounded
// memory; "main" is not wedged, so a later revision without the fault
// still applies.
func TestHookResultFilesBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// fault is run by the hook (beforeHelm) or, with enabled, by the
		// module's enabled script
		fault   string
		enabled bool
		wantErr string
	}{
		{name: "FIFO as values patch", fault: `rm -f "$VALUES_JSON_PATCH_PATH"; mkfifo "$VALUES_JSON_PATCH_PATH"`,
			wantErr: "hook 001-alpha/hooks/h.sh: VALUES_JSON_PATCH_PATH: is not a regular file"},
		{name: "FIFO as config patch", fault: `rm -f "$CONFIG_VALUES_JSON_PATCH_PATH"; mkfifo "$CONFIG_VALUES_JSON_PATCH_PATH"`,
			wantErr: "hook 001-alpha/hooks/h.sh: CONFIG_VALUES_JSON_PATCH_PATH: is not a regular file"},
		{name: "link to /etc/passwd", fault: `ln -sf /etc/passwd "$VALUES_JSON_PATCH_PATH"`,
			wantErr: "VALUES_JSON_PATCH_PATH: is a symbolic link"},
		// sparse: no disk, and the operator must not read it into memory
		{name: "300 MiB values patch", fault: `truncate -s 300M "$VALUES_JSON_PATCH_PATH"`,
			wantErr: "VALUES_JSON_PATCH_PATH: 314572800 bytes, over the limit of 1048576 bytes"},
		{name: "link as KUBERNETES_PATCH_PATH", fault: `ln -sf /etc/passwd "$KUBERNETES_PATCH_PATH"`,
			wantErr: "hook 001-alpha/hooks/h.sh: KUBERNETES_PATCH_PATH: is a symbolic link"},
		{name: "FIFO as MODULE_ENABLED_RESULT", enabled: true, fault: `rm -f "$MODULE_ENABLED_RESULT"; mkfifo "$MODULE_ENABLED_RESULT"`,
			wantErr: "hook alpha enabled script: MODULE_ENABLED_RESULT: is not a regular file"},
		{name: "FIFO as MODULE_ENABLED_REASON", enabled: true,
			fault:   `rm -f "$MODULE_ENABLED_REASON"; mkfifo "$MODULE_ENABLED_REASON"; echo false > "$MODULE_ENABLED_RESULT"`,
			wantErr: "hook alpha enabled script: MODULE_ENABLED_REASON: is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := func(v, fault string) map[string]string {
				hook, enabled := fault, `echo true > "$MODULE_ENABLED_RESULT"`
				if tt.enabled {
					hook, enabled = "", fault+"\necho true"
				}
				return merged(map[string]string{
					"modules/values.yaml":           "alphaEnabled: true\n",
					"modules/001-alpha/values.yaml": "alpha:\n  v: " + v + "\n",
					"modules/001-alpha/hooks/h.sh":  recordingHook("h", `{"beforeHelm": 1}`, hook),
					"modules/001-alpha/enabled":     "#!/usr/bin/env bash\n" + enabled + "\n",
				}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
			}
			e := parallelSetup(t, files("faulty", tt.fault), nil)
			e.commit = "0000000000000000000000000000000000000000"
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			e.start()
			e.eventually("the run to fail", func() bool { return strings.Contains(e.errors(), tt.wantErr) })
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the run failed after %s", took)
			}
			e.op.TreeChanged(e.checked("1111111111111111111111111111111111111111", files("fixed", "")))
			e.eventually("the fixed revision to apply", func() bool {
				return e.hasRelease("alpha") && e.releaseValues("alpha")["v"] == "fixed"
			})
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			// every retry of the 300 MiB case read whole would pass this
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 200<<20 {
				t.Errorf("the test's operator allocated %d MiB", grew>>20)
			}
		})
	}
}

// errors are the module and task errors /status shows, one a line.
func (e *env) errors() string {
	st := e.op.Status()
	var out []string
	for _, m := range st.Modules {
		out = append(out, m.LastError)
	}
	for _, q := range st.Queues {
		for _, task := range q.Tasks {
			out = append(out, task.LastError)
		}
	}
	return strings.Join(out, "\n")
}

// TestConfigFromSiblingFile: a hook whose --config prints a file beside it
// gets the schedule a later revision adds to that file alone, and the
// schedule runs (docs/operator.md, "How hooks run").
func TestConfigFromSiblingFile(t *testing.T) {
	t.Parallel()
	hook := "#!/usr/bin/env bash\n" +
		`if [ "${1:-}" = "--config" ]; then cat "$(dirname "$0")/config.json"; exit 0; fi` + "\n" +
		`jq -cn --arg hook h --slurpfile ctx "$BINDING_CONTEXT_PATH" '{hook:$hook, ctx:$ctx[0]}' >> "$RECORD_FILE"` + "\n"
	files := func(config string) map[string]string {
		return merged(map[string]string{
			"modules/values.yaml":                 "alphaEnabled: true\n",
			"modules/001-alpha/hooks/h.sh":        hook,
			"modules/001-alpha/hooks/config.json": config,
		}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	}
	e := parallelSetup(t, files(`{"configVersion":"v1","beforeHelm":1}`), nil)
	e.commit = "0000000000000000000000000000000000000000"
	e.start()
	e.waitReady()
	e.op.TreeChanged(e.checked("1111111111111111111111111111111111111111",
		files(`{"configVersion":"v1","beforeHelm":1,"schedule":[{"name":"tick","crontab":"*/1 * * * * *"}]}`)))
	e.eventually("the schedule from config.json to run", func() bool { return countHook(e.readRecords(), "h", "tick") >= 1 })
}
