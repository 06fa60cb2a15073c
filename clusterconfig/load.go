package clusterconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/secretfile"
)

// DefaultPath is where a cluster's config is when Settings.Layers is empty.
const DefaultPath = "clusters/{cluster}/config.yaml"

// Limits: one plain file's size, and the number of files all layers read.
const (
	MaxFileSize = 1 << 20
	MaxFiles    = 256
)

// Layer is one entry of the layering: a file, a glob or a folder (with a
// trailing slash), relative to the tree's root, {cluster} replaced.
type Layer struct {
	Path string
	// Optional: a layer that names no file is skipped, not an error.
	Optional bool
}

// Settings say where a cluster's config is and how to read it.
type Settings struct {
	// Cluster is the cluster's name, for {cluster}.
	Cluster string
	// Layers in order, later over earlier; empty means DefaultPath,
	// required.
	Layers []Layer
	// Keyring decrypts SOPS-encrypted files; nil refuses them unless
	// Preview is set.
	Keyring *secretfile.Keyring
	// Preview reads encrypted values as secretfile.Placeholder without a
	// key (for previews: nothing read so may be applied).
	Preview bool
	// Modules are the values keys of the tree's modules; when set, a key
	// for a module the tree lacks is an error, and a module's own key
	// that ends in Enabled (a module named x-enabled) is a section.
	Modules []string
	// OperatorSections are the sections of the operator's own settings
	// (OperatorKey: a fleet's ring, its change windows) that the caller
	// reads with Config.Operator; another section, or the key when this is
	// empty, is an error.
	OperatorSections []string
}

// Config is a cluster's config, merged from its layers.
type Config struct {
	// Data is in the values ConfigMap's shape: key to YAML text.
	Data map[string]string
	// Origin lists, per key, the files that set it, in layer order: the
	// last one is where its value (or the last change to it) comes from.
	Origin map[string][]string
	// Encrypted lists, per key, the paths under it whose values were
	// SOPS-encrypted in some layer: what to redact wherever values show.
	Encrypted map[string][]secretfile.Path
	// Files are the files read, in order.
	Files []string
	// layered are each key's values file by file, in layer order.
	layered map[string][]layerValue
	// operator is the operator's own settings (OperatorKey), read with
	// Operator; OperatorFiles are the files that set them.
	operator      map[string]any
	OperatorFiles []string
}

// fileOf is the file that set the value at path below key: the last
// layer whose value has it (a key's last file when none is known).
func (c *Config) fileOf(key string, path []string) string {
	ls := c.layered[key]
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].value == nil {
			break // removed here: an earlier file cannot have set it
		}
		if hasKeyPath(ls[i].value, path) {
			return ls[i].file
		}
	}
	if o := c.Origin[key]; len(o) > 0 {
		return o[len(o)-1]
	}
	return ""
}

// hasKeyPath says whether v has a value at path (map keys).
func hasKeyPath(v any, path []string) bool {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[k]; !ok || v == nil {
			return false
		}
	}
	return true
}

var clusterNameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// Load reads and merges the layers under the tree's root directory.
func Load(ctx context.Context, root string, s Settings) (*Config, error) {
	layers := s.Layers
	if len(layers) == 0 {
		layers = []Layer{{Path: DefaultPath}}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("cluster config: %w", err)
	}
	defer r.Close()
	var files []string
	for _, l := range layers {
		p, err := expand(l.Path, s.Cluster)
		if err != nil {
			return nil, err
		}
		got, err := resolve(r, root, p)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 && !l.Optional {
			return nil, errorf(p, "", 0, "no such file (the layer is required; mark it optional to skip it)")
		}
		files = append(files, got...)
		if len(files) > MaxFiles {
			return nil, errorf(p, "", 0, "the layers name more than %d files", MaxFiles)
		}
	}
	m := newMerger(s)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := readFile(r, root, f)
		if err != nil {
			return nil, err
		}
		doc, err := m.decode(ctx, f, data)
		if err != nil {
			return nil, err
		}
		m.apply(f, doc)
	}
	return m.result(files)
}

// expand replaces {cluster} and checks the path stays in the tree.
func expand(p, cluster string) (string, error) {
	if strings.Contains(p, "{cluster}") {
		if !clusterNameRe.MatchString(cluster) {
			return "", errorf(p, "", 0, "the cluster name %q is not a DNS name (lowercase letters, digits, dots and dashes)", cluster)
		}
		p = strings.ReplaceAll(p, "{cluster}", cluster)
	}
	dir := strings.HasSuffix(p, "/")
	clean := path.Clean(p)
	if !fs.ValidPath(clean) || clean == "." || strings.HasPrefix(p, "/") {
		return "", errorf(p, "", 0, "the path leaves the tree's root (want a relative path without ..)")
	}
	if dir {
		clean += "/"
	}
	return clean, nil
}

// resolve lists the files a layer names, in name order; none when it
// names nothing.
func resolve(r *os.Root, root, p string) ([]string, error) {
	fsys := r.FS()
	if dir, ok := strings.CutSuffix(p, "/"); ok {
		entries, err := fs.ReadDir(fsys, dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fileErr(root, dir, err)
		}
		var out []string
		for _, e := range entries {
			switch strings.ToLower(path.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
			default:
				continue
			}
			if e.IsDir() {
				continue
			}
			out = append(out, path.Join(dir, e.Name()))
		}
		slices.Sort(out)
		return out, nil
	}
	if strings.ContainsAny(p, "*?[") {
		got, err := fs.Glob(fsys, p)
		if err != nil {
			return nil, errorf(p, "", 0, "bad pattern: %v", err)
		}
		slices.Sort(got)
		return got, nil
	}
	if _, err := fs.Stat(fsys, p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fileErr(root, p, err)
	}
	return []string{p}, nil
}

// readFile reads one file through the root, so a symlink out of the tree
// fails, with a size limit that suits encrypted files too.
func readFile(r *os.Root, root, name string) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, fileErr(root, name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fileErr(root, name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, errorf(name, "", 0, "not a regular file")
	}
	limit := int64(secretfile.MaxFileSize)
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fileErr(root, name, err)
	}
	if int64(len(b)) > limit || (int64(len(b)) > MaxFileSize && !secretfile.IsEncrypted(b)) {
		return nil, errorf(name, "", 0, "over %d bytes (%d for a SOPS-encrypted file)", MaxFileSize, secretfile.MaxFileSize)
	}
	return b, nil
}

// fileErr names an escape through a symlink as such.
func fileErr(root, name string, err error) error {
	if escapes(root, name) {
		return errorf(name, "", 0, "the path leaves the tree's root through a symlink")
	}
	return &Error{File: name, Err: err}
}

func escapes(root, name string) bool {
	realRoot, err1 := filepath.EvalSymlinks(root)
	real, err2 := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(name)))
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(realRoot, real)
	return err != nil || !filepath.IsLocal(rel)
}
