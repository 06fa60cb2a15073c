package gitsync

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirFD is an open directory of a revision, opened through an os.Root
// (so never outside it), whose entries are then made, linked, stat'ed
// and read by name: one name, no path, no symlink followed (O_NOFOLLOW,
// AT_SYMLINK_NOFOLLOW, O_EXCL), one system call each. os.Root itself
// resolves every path component in turn, which made a checkout of
// thousands of files several times slower.
type dirFD struct {
	f  *os.File
	fd int
}

// openDir opens dir ("" for the root) under root.
func openDir(root *os.Root, dir string) (*dirFD, error) {
	f, err := root.Open(filepath.FromSlash(orDot(dir)))
	if err != nil {
		return nil, err
	}
	return &dirFD{f: f, fd: int(f.Fd())}, nil
}

func (d *dirFD) close() {
	if d != nil {
		_ = d.f.Close()
	}
}

func (d *dirFD) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

func (d *dirFD) mkdir(name string) error { return unix.Mkdirat(d.fd, name, 0o700) }

func (d *dirFD) symlink(target, name string) error { return unix.Symlinkat(target, d.fd, name) }

// linkFrom makes name a hard link to the file src holds under the same
// name.
func (d *dirFD) linkFrom(src *dirFD, name string) error {
	return unix.Linkat(src.fd, name, d.fd, name, 0)
}

// create makes a new file (never an existing one, nor through a link).
func (d *dirFD) create(name string, perm uint32) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// open opens a regular file to read it (not through a link; without
// blocking on a FIFO put in its place).
func (d *dirFD) open(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: name, Err: unix.EINVAL}
	}
	return os.NewFile(uintptr(fd), name), nil
}

func (d *dirFD) readlink(name string) (string, error) {
	buf := make([]byte, maxLinkTarget+1)
	n, err := unix.Readlinkat(d.fd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// names lists the directory.
func (d *dirFD) names() ([]string, error) { return d.f.Readdirnames(-1) }
