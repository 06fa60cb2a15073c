package batchtest

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Modes of the built executable.
const (
	// Batch answers `hook config` with the config, runs `hook run ID` and
	// `hook ready`, and answers `hook check` (module-sdk's settings check:
	// at most 3 replicas, a warning at 3).
	Batch = "batch"
	// Plain is a compiled shell-operator style hook: `--config` prints the
	// config, `hook config` fails, any other call runs as hook "plain".
	Plain = "plain"
	// Sleep never answers `hook config`: it sleeps.
	Sleep = "sleep"
)

// Options say what the executable prints and does.
type Options struct {
	Mode string // Batch (default), Plain or Sleep
	// Config is what `hook config` (Plain: `--config`) prints.
	Config string
	// Key is the values key a run patches ("" patches nothing): each run
	// adds /Key/<hook>, with the binding and the snapshot objects it saw.
	Key string
	// ReadyProbe is a file: while it holds text, `hook ready` fails with
	// it after its run, as module-sdk's readiness hook fails (one JSON
	// line {"message": "execute: <text>"} on stderr, exit status 1).
	ReadyProbe string
}

// Build compiles the executable into dir/name (mode 0755) and returns its
// path. Each run appends a JSON line {hook, args, ctx, values, config,
// module} to $RECORD_FILE, as the lifecycle tests' recording hooks do (a
// settings check: {hook: "check", args, settings, module}); a validating
// webhook run answers {"allowed":true}.
func Build(t testing.TB, dir, name string, o Options) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "testdata", "batchhook")
	if o.Mode == "" {
		o.Mode = Batch
	}
	out := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ldflags := "-s -w -X main.mode=" + o.Mode +
		" -X main.config=" + base64.RawURLEncoding.EncodeToString([]byte(o.Config)) +
		" -X main.key=" + o.Key + " -X main.readyProbe=" + o.ReadyProbe
	// go test puts its toolchain's bin first in PATH
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the batch hook: %v\n%s", err, b)
	}
	return out
}
