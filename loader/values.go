package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/addonops/addon-operator/values"
)

// readValues parses a values file, decrypted when SOPS-encrypted (module:
// see session.parseValues); a missing one is nil values.
func readValues(d dir, entry, module string) (values.Values, error) {
	b, err := d.readFile(entry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.s.parseValues(d.path(entry), b, module)
}

// readSchemas reads the schemas in parent's openapi directory, if any. The
// directory is resolved first, so a link in its place that leads out is
// the error, rather than the files that cannot be reached through it.
func readSchemas(parent dir) (*values.Schemas, error) {
	d := parent.sub("openapi")
	info, err := optionalStat(parent, "openapi")
	if err != nil {
		return nil, err
	}
	if info != nil && !info.IsDir() {
		return nil, fileErr(d.abs, errors.New("not a directory"))
	}
	read := func(name string) ([]byte, error) {
		if info == nil {
			return nil, nil
		}
		b, err := d.readFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	c, err := read(values.ConfigSchemaFile)
	if err != nil {
		return nil, err
	}
	v, err := read(values.ValuesSchemaFile)
	if err != nil {
		return nil, err
	}
	// a $ref may name a file beneath openapi/, read as the schemas are:
	// beneath the tree's root and within the file size limit
	refs := func(name string) ([]byte, error) {
		if filepath.IsAbs(name) {
			return d.s.readAbsolute(name)
		}
		return d.readFile(name)
	}
	return values.LoadSchemasWithRefs(d.abs, refs, c, v)
}

// commonValues reads the values.yaml of every modules directory into one
// document and names it for messages. The original addon-operator merges
// their global sections, in the order of the list, and so does this; any
// other key set in two of them is an error naming both files. With several
// files each is checked on its own first, so an error names its file.
func commonValues(modules []dir, src values.Source) (values.Values, string, error) {
	type file struct {
		path string
		doc  values.Values
	}
	var files []file
	for _, d := range modules {
		doc, err := readValues(d, "values.yaml", "")
		if err != nil {
			return nil, "", err
		}
		if doc != nil {
			files = append(files, file{d.path("values.yaml"), doc})
		}
	}
	switch len(files) {
	case 0:
		return nil, modules[0].path("values.yaml"), nil
	case 1:
		return files[0].doc, files[0].path, nil
	}
	out := values.Values{}
	from := map[string]string{}
	for _, f := range files {
		src.Common, src.CommonFile = f.doc, f.path
		if _, _, err := values.NewStore(src); err != nil {
			return nil, "", err
		}
		for k, v := range f.doc {
			prev, dup := from[k]
			if dup && k != values.GlobalKey {
				return nil, "", fileErr(f.path, fmt.Errorf("%s is also set in %s", k, prev))
			}
			from[k] = f.path
			if dup {
				v = values.Merge(out[k], v)
			}
			out[k] = v
		}
	}
	return out, files[0].path, nil
}
