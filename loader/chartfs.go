package loader

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// maxChartFile bounds each chart file ChartFS reads: a chart's files go
// to Helm whole (dashboards and CRDs are the large ones).
const maxChartFile = 64 << 20

// ChartFS is mod's chart as a file system read as the loader reads the
// tree: beneath the tree's root, with the tree root alias mapped, links
// resolved (a directory entry is what its link leads to) and only regular
// files and directories. It is nil when the model has no alias, and Helm
// reads the chart directory itself: its links then need no mapping, and
// the loader has already refused any that leads out of the tree.
func (m *Model) ChartFS(mod *Module) fs.FS {
	if m.alias == "" || m.root == "" {
		return nil
	}
	rel, err := filepath.Rel(m.root, mod.Dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil
	}
	return chartFS{root: m.root, rel: rel, alias: m.alias}
}

type chartFS struct{ root, rel, alias string }

var (
	_ fs.ReadDirFS  = chartFS{}
	_ fs.ReadFileFS = chartFS{}
	_ fs.StatFS     = chartFS{}
)

// with runs fn on the chart directory, in a session of its own, bounded
// in time as a load is.
func (c chartFS) with(op, name string, fn func(d dir, entry string) error) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newSession(ctx, maxChartFile, c.alias)
	defer s.close()
	r, err := s.openRoot(c.root)
	if err != nil {
		return err
	}
	s.tree = dir{s: s, root: r, rel: ".", abs: c.root}
	return fn(s.tree.sub(c.rel), name)
}

func (c chartFS) Open(name string) (fs.File, error) {
	var f *os.File
	err := c.with("open", name, func(d dir, entry string) (err error) {
		if info, serr := d.stat(entry); serr == nil && info.IsDir() {
			return &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid} // ReadDir lists directories
		}
		f, _, err = d.open(entry)
		return err
	})
	return f, err
}

func (c chartFS) ReadFile(name string) (b []byte, err error) {
	err = c.with("read", name, func(d dir, entry string) (err error) { b, err = d.readFile(entry); return err })
	return b, err
}

func (c chartFS) Stat(name string) (info fs.FileInfo, err error) {
	err = c.with("stat", name, func(d dir, entry string) (err error) {
		if entry == "." {
			entry = filepath.Base(d.rel)
			d = dir{s: d.s, root: d.root, rel: filepath.Dir(d.rel), abs: filepath.Dir(d.abs)}
		}
		info, err = d.stat(entry)
		return err
	})
	return info, err
}

// ReadDir lists a directory with each link resolved: its entries are the
// files and directories the links lead to, as Helm's own walk sees them.
func (c chartFS) ReadDir(name string) (out []fs.DirEntry, err error) {
	err = c.with("readdir", name, func(d dir, entry string) error {
		if entry != "." {
			d = d.sub(entry)
		}
		_, entries, err := d.list(nil)
		if err != nil {
			return err
		}
		for _, e := range entries {
			info, err := d.stat(e.name)
			if err != nil {
				return err
			}
			out = append(out, fs.FileInfoToDirEntry(namedInfo{info, e.name}))
		}
		return nil
	})
	return out, err
}

// namedInfo keeps an entry's own name: a stat through a mapped link names
// the link's target.
type namedInfo struct {
	fs.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }
