// Command batchhook speaks module-sdk's batch hook protocol for tests
// (package batchtest builds it; its settings come from -ldflags -X).
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"
)

var mode, config, key, readyProbe string

func main() {
	cfg, err := base64.RawURLEncoding.DecodeString(config)
	if err != nil {
		fail("bad config: %v", err)
	}
	args := os.Args[1:]
	switch {
	case mode == "plain" && len(args) == 1 && args[0] == "--config":
		os.Stdout.Write(cfg)
	case mode == "plain" && len(args) == 0:
		run("plain")
	case mode == "plain":
		fail("unknown command %q", args)
	case len(args) == 2 && args[0] == "hook" && args[1] == "config":
		if mode == "sleep" {
			time.Sleep(time.Hour)
		}
		os.Stdout.Write(cfg)
	case len(args) == 2 && args[0] == "hook" && args[1] == "list":
		var c struct {
			Hooks []struct{ Metadata struct{ Name string } }
		}
		_ = json.Unmarshal(cfg, &c)
		fmt.Printf("Found %d items:\n", len(c.Hooks))
		for i, h := range c.Hooks {
			fmt.Printf("%d - %s\n", i, h.Metadata.Name)
		}
	case len(args) == 3 && args[0] == "hook" && args[1] == "run":
		run(args[2])
	case len(args) == 2 && args[0] == "hook" && args[1] == "ready":
		run("ready")
		probe()
	case len(args) == 2 && args[0] == "hook" && args[1] == "check":
		check()
	default:
		fail("unknown command %q", args)
	}
}

func run(hook string) {
	var ctx []map[string]any
	var values, configValues any
	read(os.Getenv("BINDING_CONTEXT_PATH"), &ctx)
	read(os.Getenv("VALUES_PATH"), &values)
	read(os.Getenv("CONFIG_VALUES_PATH"), &configValues)
	record(map[string]any{
		"hook": hook, "args": os.Args[1:], "ctx": ctx, "values": values, "config": configValues,
		"module": os.Getenv("MODULE_NAME"),
	})
	if len(ctx) > 0 && ctx[0]["type"] == "Validating" {
		// a webhook run: allow, and change nothing else
		if err := os.WriteFile(os.Getenv("VALIDATING_RESPONSE_PATH"), []byte(`{"allowed":true}`), 0o600); err != nil {
			fail("response: %v", err)
		}
		return
	}
	if key == "" || len(ctx) == 0 {
		return
	}
	// the binding and the names its snapshots hold, so a test sees that
	// the patch reached the chart and what the run was given
	objects := []string{}
	snaps, _ := ctx[0]["snapshots"].(map[string]any)
	for _, s := range snaps {
		items, _ := s.([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if name, ok := m["filterResult"].(string); ok {
					objects = append(objects, name)
				}
			}
		}
	}
	sort.Strings(objects)
	patch, _ := json.Marshal([]map[string]any{{
		"op": "add", "path": "/" + key + "/batch-" + hook,
		"value": map[string]any{"binding": ctx[0]["binding"], "objects": objects},
	}})
	if err := os.WriteFile(os.Getenv("VALUES_JSON_PATCH_PATH"), patch, 0o600); err != nil {
		fail("patch: %v", err)
	}
}

// probe fails the readiness hook, as module-sdk's does when its probe
// cannot finish, while the probe file (-X main.readyProbe) holds text:
// one JSON error line on stderr and exit status 1.
func probe() {
	if readyProbe == "" {
		return
	}
	b, err := os.ReadFile(readyProbe)
	if err != nil || len(b) == 0 {
		return
	}
	answer(map[string]any{"message": "execute: " + string(b)})
}

// check is module-sdk's settings check protocol: the settings are the JSON
// file at $SETTINGS_PATH; a plain pass exits 0 and prints nothing, any
// other result is one JSON line {valid, message, warnings} on stderr with
// exit status 1. This one allows at most 3 replicas and warns at 3.
func check() {
	var settings map[string]any
	read(os.Getenv("SETTINGS_PATH"), &settings)
	record(map[string]any{"hook": "check", "args": os.Args[1:], "settings": settings, "module": os.Getenv("MODULE_NAME")})
	n, _ := settings["replicas"].(float64)
	switch {
	case n > 3:
		answer(map[string]any{"valid": false, "message": fmt.Sprintf("replicas: at most 3, got %v", n), "warnings": nil})
	case n == 3:
		answer(map[string]any{"valid": true, "message": "", "warnings": []string{"replicas: 3 is the most allowed"}})
	}
}

// answer prints one JSON line on stderr and exits 1.
func answer(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(os.Stderr, string(b))
	os.Exit(1)
}

func record(v any) {
	rec, _ := json.Marshal(v)
	f, err := os.OpenFile(os.Getenv("RECORD_FILE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fail("record: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(append(rec, '\n')); err != nil {
		fail("record: %v", err)
	}
}

func read(path string, into any) {
	b, err := os.ReadFile(path)
	if err != nil {
		fail("read %s: %v", path, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		fail("parse %s: %v", path, err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
