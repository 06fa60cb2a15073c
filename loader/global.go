package loader

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"strconv"

	"github.com/addonops/addon-operator/values"
)

// loadGlobal reads the global hooks directory (hooks and schemas) and hashes
// it together with the values.yaml of every modules directory.
func loadGlobal(modules []dir, global dir) (*Global, error) {
	g := &Global{Schemas: &values.Schemas{}}
	h := sha256.New()
	if global.root != nil {
		var err error
		if g.Hooks, err = findHooks(global, global.abs, "", map[string]bool{"openapi": true}); err != nil {
			return nil, err
		}
		if g.Schemas, err = readSchemas(global); err != nil {
			return nil, err
		}
		// the directory alone is what the hooks' --config may read
		scope := sha256.New()
		if err := hashTree(io.MultiWriter(h, scope), global); err != nil {
			return nil, err
		}
		sum := hex.EncodeToString(scope.Sum(nil))
		for _, hook := range g.Hooks {
			hook.scope = sum
		}
	}
	for i, d := range modules {
		name := "values.yaml"
		if i > 0 {
			name = strconv.Itoa(i) + "/values.yaml"
		}
		if err := hashFile(h, d, "values.yaml", name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	return g, nil
}
