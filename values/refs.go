package values

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-openapi/spec"
)

// RefReader reads a file a schema's $ref names, by its path relative to
// the openapi directory (already checked to stay beneath it), or by an
// absolute path, cleaned, which it reads only when it maps it onto the
// tree (the loader's tree root alias, docs/operator.md "Trees from git")
// and refuses otherwise. The loader's reader is bounded by the tree's root
// and its file size limit either way.
type RefReader func(rel string) ([]byte, error)

// errRefOut explains which $refs are followed (docs/security.md, "Reading
// a tree").
var errRefOut = errors.New("only fragments (#/definitions/...) and files beneath the openapi directory are followed")

// checkRefs refuses, before anything is resolved, a $ref that names
// another scheme or host (http:, https:, file:, //host) or a relative path
// that leads out of the openapi directory, so a schema from a pull request
// cannot make a preview fetch a URL or read a file outside the tree. An
// absolute path goes to the RefReader, which alone can map it (expand).
// from is the directory of the file, relative to the openapi directory;
// "" for a file an absolute path reached, whose relative refs resolve to
// absolute paths the reader judges in turn.
func checkRefs(src, from string, node any) error {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if ref, ok := v.(string); ok && k == "$ref" {
				if err := checkRef(ref, from); err != nil {
					return fmt.Errorf("%s: $ref %q: %w", src, ref, err)
				}
				continue
			}
			if err := checkRefs(src, from, v); err != nil {
				return err
			}
		}
	case []any:
		for _, v := range n {
			if err := checkRefs(src, from, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRef(ref, from string) error {
	if strings.HasPrefix(ref, "#") {
		return nil
	}
	u, err := url.Parse(ref)
	switch {
	case err != nil:
		return fmt.Errorf("not a reference: %w", err)
	case u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(ref, "//"):
		return fmt.Errorf("names a network location or another scheme; %w", errRefOut)
	case filepath.IsAbs(u.Path), from == "":
	case u.Path != "" && !filepath.IsLocal(filepath.Join(from, u.Path)):
		return fmt.Errorf("leads out of the openapi directory; %w", errRefOut)
	}
	return nil
}

// expand resolves s's $refs. Every document go-openapi asks for goes
// through one loader: the schema itself (as transformed, from root) and
// files beneath the openapi directory through refs; anything else, which
// a file reached through a ref may still name, is refused. Its own cache
// keeps a file read for one tree from answering for another.
func expand(src, file string, s *spec.Schema, root []byte, refs RefReader) error {
	base, err := filepath.Abs(file)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	dir := filepath.Dir(base)
	load := func(pth string) (json.RawMessage, error) {
		u, err := url.Parse(pth)
		if err != nil || u.Scheme != "file" || u.Host != "" {
			return nil, fmt.Errorf("$ref to %s: %w", pth, errRefOut)
		}
		if u.Path == base {
			return root, nil
		}
		rel, err := filepath.Rel(dir, u.Path)
		if err != nil || !filepath.IsLocal(rel) {
			return loadAbsolute(u.Path, refs)
		}
		if refs == nil {
			return nil, fmt.Errorf("$ref to %s: files are not read here; %w", rel, errRefOut)
		}
		b, err := refs(rel)
		if err != nil {
			return nil, fmt.Errorf("$ref to %s: %w", rel, err)
		}
		doc, err := ParseYAML(filepath.Join(dir, rel), b)
		if err != nil {
			return nil, err
		}
		if err := checkRefs(filepath.Join(dir, rel), filepath.Dir(rel), map[string]any(doc)); err != nil {
			return nil, err
		}
		return json.Marshal(doc)
	}
	// as a URL: a path may hold '#' or '%'
	baseURL := (&url.URL{Scheme: "file", Path: base}).String()
	opts := &spec.ExpandOptions{RelativeBase: baseURL, PathLoader: load}
	if err := spec.ExpandSchemaWithBasePath(s, &refCache{docs: map[string]any{}}, opts); err != nil {
		return fmt.Errorf("%s: resolve $ref: %w", src, err)
	}
	return nil
}

// loadAbsolute reads a file an absolute path names, outside the openapi
// directory: only a reader that maps it onto the tree reads it (the tree
// root alias); its own relative $refs resolve to absolute paths again.
func loadAbsolute(path string, refs RefReader) (json.RawMessage, error) {
	if refs == nil {
		return nil, fmt.Errorf("$ref to %s: is an absolute path; %w", path, errRefOut)
	}
	b, err := refs(path)
	if err != nil {
		return nil, fmt.Errorf("$ref to %s: is an absolute path; %w", path, err)
	}
	doc, err := ParseYAML(path, b)
	if err != nil {
		return nil, err
	}
	if err := checkRefs(path, "", map[string]any(doc)); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// refCache is go-openapi's resolution cache for one expansion.
type refCache struct {
	mu   sync.Mutex
	docs map[string]any
}

func (c *refCache) Get(uri string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.docs[uri]
	return v, ok
}

func (c *refCache) Set(uri string, data any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.docs[uri] = data
}
