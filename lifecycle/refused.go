package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
)

// treeRefusal is a tree's load or admission error, with what a commit
// status may say of it: the file and the module, never the error's text,
// which can carry a hook's --config output or values (docs/security.md,
// "Who sees what"). Its Error is the error's own.
type treeRefusal struct {
	err    error
	reason string
}

func (e *treeRefusal) Error() string { return e.err.Error() }
func (e *treeRefusal) Unwrap() error { return e.err }

// Tree refusal stages: what was refused, when no file is named.
const (
	refusedLoad  = "the tree does not load"
	refusedAdmit = "the tree refuses the values ConfigMap"
)

// refusal wraps err, a refusal of the tree under root at stage, with
// its commit status reason; modulesDirs are the tree's modules
// directories, absolute.
func refusal(root string, modulesDirs []string, stage string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	return &treeRefusal{err: err, reason: refusedReason(root, modulesDirs, stage, err)}
}

// refusedReason names what was refused: "module alpha:
// modules/001-alpha/values.yaml does not load", "module alpha: alpha
// values do not match modules/001-alpha/openapi/config-values.yaml", or
// the stage alone; paths are relative to root, as in the repository.
func refusedReason(root string, modulesDirs []string, stage string, err error) string {
	const tail = "; the previous revision keeps running (see /status)"
	if what := configRefused(err); what != "" {
		return what + tail
	}
	var ve *values.ValidationError
	if errors.As(err, &ve) {
		if file := under(root, ve.Schema); file != "" {
			return withModule(modulesDirs, ve.Schema, ve.Section+" values do not match "+file) + tail
		}
	}
	if path := pathIn(root, err); path != "" {
		return withModule(modulesDirs, path, under(root, path)+" does not load") + tail
	}
	return stage + tail
}

// pathIn is the first path beneath root that err names: a loader.Error's,
// else the first in its text (values files name themselves so).
func pathIn(root string, err error) string {
	var le *loader.Error
	if errors.As(err, &le) && under(root, le.Path) != "" {
		return le.Path
	}
	msg := err.Error()
	prefix := filepath.Clean(root) + string(filepath.Separator)
	i := strings.Index(msg, prefix)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(prefix):]
	if end := strings.IndexAny(rest, ": \n\t\"'"); end >= 0 {
		rest = rest[:end]
	}
	if rest == "" {
		return ""
	}
	return prefix + rest
}

// under is path relative to root, with slashes; "" when it is not
// beneath root.
func under(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// withModule prefixes what with the module whose directory holds path.
func withModule(modulesDirs []string, path, what string) string {
	for _, d := range modulesDirs {
		rel := under(d, path)
		entry, _, found := strings.Cut(rel, "/")
		if rel == "" || !found {
			continue // the modules directory's own files
		}
		if _, name, err := values.ParseModuleDir(entry); err == nil {
			entry = name
		}
		return fmt.Sprintf("module %s: %s", entry, what)
	}
	return what
}

// refusedReasonOf is the commit status reason of a refused tree's error:
// refusal's, else the generic one.
func refusedReasonOf(err error) string {
	var tr *treeRefusal
	if errors.As(err, &tr) {
		return tr.reason
	}
	return "the operator refused its tree; the previous revision keeps running (see /status)"
}

// configRefused names a refused config in git (docs/operator.md, "Config
// in git"): its file and key, and for a file that does not decrypt why
// and the keys it was encrypted for (public keys); never a value. "" when
// err is not about it.
func configRefused(err error) string {
	var ce *clusterconfig.Error
	if !errors.As(err, &ce) {
		return ""
	}
	// short: a commit status holds 140 characters, and an age public key
	// is 62 of them
	what := "config " + ce.File
	if ce.Key != "" {
		what += " key " + ce.Key
	}
	var se *secretfile.Error
	if errors.As(err, &se) {
		what += ": " + string(se.Reason)
		if len(se.Recipients) > 0 {
			what += " for " + strings.Join(se.Recipients, ", ")
		}
		return what
	}
	return what + " is refused"
}
