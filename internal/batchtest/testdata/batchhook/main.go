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

var mode, config, key string

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
	rec, _ := json.Marshal(map[string]any{
		"hook": hook, "args": os.Args[1:], "ctx": ctx, "values": values, "config": configValues,
		"module": os.Getenv("MODULE_NAME"),
	})
	f, err := os.OpenFile(os.Getenv("RECORD_FILE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fail("record: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(append(rec, '\n')); err != nil {
		fail("record: %v", err)
	}
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
