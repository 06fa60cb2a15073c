package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func writeExec(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// The tests here are not parallel: a file being written while another
// test forks can fail its exec with ETXTBSY (reaper_test.go).

func TestEnvShebang(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		line string
		want string // "" when the kernel and env start it
	}{
		{"#!/usr/bin/env bash\n", "bash"},
		{"#! /usr/bin/env   python3  \n", "python3"},
		{"#!/usr/bin/env\tbash\t\n", "bash"},
		{"#!/usr/bin/env bash\r\n", ""},                           // the kernel looks for "bash\r"
		{"#!/usr/bin/env -S bash -e\n", ""},                       // an option
		{"#!/usr/bin/env bash -e\n", ""},                          // one argument "bash -e" to env
		{"#!/usr/bin/env FOO=1 bash\n", ""},                       // an assignment
		{"#!/usr/bin/env\n", ""},                                  // no command
		{"#!/bin/bash\n", ""},                                     // the kernel's single exec already
		{"#!/usr/local/bin/env bash\n", ""},                       // another env
		{"echo no shebang\n", ""},                                 // no line to read
		{"#!/usr/bin/env bash", ""},                               // no end of line
		{"#!/usr/bin/env " + strings.Repeat("b", 120) + "\n", ""}, // past what older kernels read
		{"#!/usr/bin/env ..\n", ""},                               // not a command name
	}
	// a FIFO swapped in for a hook is not waited on
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	if name, ok := envShebang(fifo); ok {
		t.Errorf("a FIFO read as %q", name)
	}
	for i, c := range cases {
		p := writeExec(t, dir, "s"+string(rune('a'+i)), c.line+"exit 0\n", 0o755)
		got, ok := envShebang(p)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("%q: got %q %v, want %q", c.line, got, ok, c.want)
		}
	}
}

// A script started in env's place gets what env would give it: the same
// argv (as /proc shows it), environment and directory.
func TestDirectAsEnvStartsIt(t *testing.T) {
	dir := t.TempDir()
	body := "#!/usr/bin/env bash\n" +
		`tr '\0' ' ' < /proc/$$/cmdline; echo; echo "$0|$*|$PWD|$MARK|$(readlink /proc/$$/exe)"` + "\n"
	p := writeExec(t, dir, "hook.sh", body, 0o755)
	extra := []string{"MARK=m1", "PATH=/usr/local/bin:/usr/bin:/bin"}
	env := append(BaseEnv(), extra...)
	c := Command{Path: p, Args: []string{"--config", "x y"}, Dir: dir, Env: extra, CaptureStdout: true}
	cmd, short := command(c, env, true)
	if !short || filepath.Base(cmd.Path) != "bash" || strings.Join(cmd.Args, " ") != "bash "+p+" --config x y" {
		t.Fatalf("command(%s) = %q %q %v, want bash started with [bash %s --config x y]", p, cmd.Path, cmd.Args, short, p)
	}
	got, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	kernel := exec.Command(p, "--config", "x y")
	kernel.Dir, kernel.Env = dir, env
	want, err := kernel.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("started in env's place:\n%s\nstarted by the kernel and env:\n%s", got, want)
	}
}

// What the kernel or env would refuse or answer differently is left to
// them: the run fails as it did.
func TestDirectLeavesToEnv(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	writeExec(t, bin, "myinterp", "#!/bin/sh\necho \"mine $*\"\n", 0o755)
	writeExec(t, bin, "noexec-interp", "#!/bin/sh\necho never\n", 0o644)
	// no #! line: its start fails (ENOEXEC), and env's execvp runs it with /bin/sh
	writeExec(t, bin, "raw-interp", "echo \"raw $*\"\n", 0o755)
	cases := []struct {
		name, body string
		mode       os.FileMode
		path       string
		wantOut    string
		wantErr    string
	}{
		{name: "not executable", body: "#!/usr/bin/env bash\necho ran\n", mode: 0o644, path: "/usr/bin:/bin", wantErr: "permission denied"},
		{name: "not on PATH", body: "#!/usr/bin/env no-such-interp\n", mode: 0o755, path: "/usr/bin:/bin", wantErr: "no-such-interp"},
		{name: "not executable on PATH", body: "#!/usr/bin/env noexec-interp\n", mode: 0o755, path: bin + ":/usr/bin:/bin", wantErr: "noexec-interp"},
		{name: "relative PATH entry", body: "#!/usr/bin/env myinterp\n", mode: 0o755, path: "rel:" + bin, wantOut: "mine "},
		{name: "found on PATH", body: "#!/usr/bin/env myinterp\n", mode: 0o755, path: bin, wantOut: "mine "},
		{name: "a start that fails", body: "#!/usr/bin/env raw-interp\n", mode: 0o755, path: bin + ":/usr/bin:/bin", wantOut: "raw "},
	}
	starts := map[string]bool{"found on PATH": true, "a start that fails": true}
	for i, c := range cases {
		p := writeExec(t, dir, "h"+string(rune('a'+i)), c.body, c.mode)
		env := []string{"PATH=" + c.path}
		if _, short := command(Command{Path: p}, env, true); short != starts[c.name] {
			t.Errorf("%s: started in env's place %v, want %v", c.name, short, starts[c.name])
		}
		out, err := Run(context.Background(), Command{Path: p, Dir: dir, Env: env, CaptureStdout: true})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want one naming %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || !strings.HasPrefix(string(out), c.wantOut+p) {
			t.Errorf("%s: %q, %v; want %q", c.name, out, err, c.wantOut+p)
		}
	}
}
