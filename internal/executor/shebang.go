package executor

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// envPath is the interpreter of the `#!/usr/bin/env NAME` line that
// directStart starts in env's place.
const envPath = "/usr/bin/env"

// shebangMax is how much of a script's start the kernel reads for its
// `#!` line: BINPRM_BUF_SIZE, 128 bytes before Linux 5.1, where a longer
// line was cut; a line that needs more is left to the kernel.
const shebangMax = 128

// directStart says how to start a script whose first line is exactly
// `#!/usr/bin/env NAME` (NAME one plain word) without starting env: NAME
// as env finds it on the script's own PATH, with the argv env gives it
// (NAME, the script's path, its arguments), so the hook gets the same
// process, arguments and environment one exec sooner; env is a whole
// dynamically linked program, 2–3 ms a hook run on the machine of
// docs/performance.md. Anything the kernel and env could answer
// differently (another form of the line, a script the kernel would not
// run: not executable, on a noexec mount, no env; a NAME not on PATH, a
// relative PATH entry) leaves the start to them: ok is false.
func directStart(path string, env []string) (interp string, argv []string, ok bool) {
	if !filepath.IsAbs(path) {
		return "", nil, false
	}
	// envShebang read it as a regular file
	name, ok := envShebang(path)
	if !ok || !executable(path) || !runnable(envPath) {
		return "", nil, false
	}
	interp, ok = lookPath(name, env)
	if !ok {
		return "", nil, false
	}
	return interp, []string{name, path}, true
}

// envShebang is NAME of a file starting `#!/usr/bin/env NAME\n`, split as
// the kernel splits the line (interpreter, then at most one argument up to
// the line's end, blanks around it trimmed), and only when that argument
// is one word env takes as a command: no option, no assignment, no blank
// or carriage return inside.
func envShebang(path string) (string, bool) {
	// not waiting on a FIFO nor opening a terminal swapped in since the
	// load: only a regular file is read
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	buf := make([]byte, shebangMax)
	n, _ := io.ReadFull(f, buf)
	line, _, found := bytes.Cut(buf[:n], []byte("\n"))
	if !found || !bytes.HasPrefix(line, []byte("#!")) {
		return "", false
	}
	rest := strings.TrimLeft(string(line[2:]), " \t")
	interp, arg := rest, ""
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		interp, arg = rest[:i], strings.Trim(rest[i:], " \t")
	}
	if interp != envPath || !plainWord(arg) {
		return "", false
	}
	return arg, true
}

// plainWord: a command name env runs as it is.
func plainWord(s string) bool {
	if s == "" || s[0] == '-' || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '+' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

// runnable: a regular file the kernel would execute for this process.
func runnable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && executable(path)
}

// executable: execute permission for this process, not on a noexec mount.
func executable(path string) bool {
	var fs unix.Statfs_t
	return unix.Access(path, unix.X_OK) == nil && unix.Statfs(path, &fs) == nil && fs.Flags&unix.ST_NOEXEC == 0
}

// lookPath finds name as env's execvp does, on the PATH of env (the
// child's environment): the first directory holding a runnable file of
// that name. A missing PATH, or an empty or relative entry (the child's
// working directory), is left to env.
func lookPath(name string, env []string) (string, bool) {
	path, set := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, set = v, true // the last one wins, as in exec.Cmd's dedup
		}
	}
	if !set {
		return "", false
	}
	for _, dir := range strings.Split(path, ":") {
		if !filepath.IsAbs(dir) {
			return "", false
		}
		// joined as execvp joins it, not tidied: "/a/link/.." is not "/a"
		if p := dir + "/" + name; runnable(p) {
			return p, true
		}
	}
	return "", false
}
