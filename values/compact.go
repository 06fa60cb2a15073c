package values

import (
	"strconv"
	"strings"
)

// compact shortens a stored patch so that a hook that patches the same keys
// on every run does not grow it without bound. Its promise: wherever the
// original patch applies, the compacted one applies too and gives the same
// document. test operations go: they change nothing and were checked when
// their hook ran. Each add, replace or remove then absorbs the earlier
// operations it makes redundant (see absorb).
func compact(p Patch) Patch {
	out := make(Patch, 0, len(p))
	for _, q := range p {
		if q.Op == "test" {
			continue
		}
		out = absorb(out, &q)
		out = append(out, q)
	}
	return out
}

// absorb drops the operations of out that q, about to follow them, makes
// redundant: an earlier P is dropped when q overwrites everything P wrote
// without needing P (overwrites) and no operation kept between them reads
// or writes where P wrote (dependsOn). Dropping an add that a replace
// relies on turns the replace into an add, which is what the pair did.
func absorb(out Patch, q *Operation) Patch {
	qs, ok := plainPath(*q)
	if !ok {
		return out
	}
	keep := make([]bool, len(out))
	var between Patch // kept operations after out[i]
	for i := len(out) - 1; i >= 0; i-- {
		p := out[i]
		drop, toAdd := overwrites(q.Op, qs, p)
		if drop && !anyDependsOn(between, p) {
			if toAdd {
				q.Op = "add"
			}
			continue
		}
		keep[i] = true
		between = append(between, p)
	}
	kept := out[:0]
	for i, p := range out {
		if keep[i] {
			kept = append(kept, p)
		}
	}
	return kept
}

// overwrites says whether an operation qOp on qs leaves nothing of p and
// applies just as well without it, and whether q must become an add for
// that. Only add, replace and remove on object keys qualify: the meaning of
// an array index depends on what came before.
func overwrites(qOp string, qs []string, p Operation) (drop, toAdd bool) {
	ps, ok := plainPath(p)
	if !ok || !hasPrefix(ps, qs) {
		return false, false
	}
	same := len(ps) == len(qs)
	switch qOp {
	case "add":
		return true, false
	case "replace":
		switch p.Op {
		case "add":
			// the add may have created what q replaces
			return same, same
		case "remove":
			// a replace of what was just removed does not apply; below it,
			// q's path still exists without p
			return !same, false
		}
		return true, false
	case "remove":
		// an add also creates missing parents, which the remove leaves;
		// only the document root always exists
		return p.Op != "add" || len(qs) == 1, false
	}
	return false, false
}

func anyDependsOn(ops Patch, p Operation) bool {
	for _, r := range ops {
		if dependsOn(r, p) {
			return true
		}
	}
	return false
}

// dependsOn says whether r, applied after p, could behave differently
// without p. p is a plain add, replace or remove. r depends on p when it
// touches p's path, above or below; and, when p is an add, when it could
// see a parent p created, the deepest one their paths share: a copy or move
// into it needs it to exist, and an add whose next segment is an array
// index would create it as an array where p made an object. Reads and
// other writes below it find nothing p made there either way.
func dependsOn(r, p Operation) bool {
	ps, _ := plainPath(p)
	targets := []string{r.Path}
	if r.Op == "copy" || r.Op == "move" {
		targets = append(targets, r.From)
	}
	for i, t := range targets {
		ts, ok := segments(t)
		if !ok || hasPrefix(ts, ps) || hasPrefix(ps, ts) {
			return true
		}
		c := commonPrefix(ts, ps)
		if p.Op != "add" || c == 0 {
			continue
		}
		intoParent := i == 0 && (r.Op == "copy" || r.Op == "move") && len(ts) == c+1
		if intoParent || (r.Op == "add" && isIndex(ts[c])) {
			return true
		}
	}
	return false
}

// plainPath splits the path of an add, replace or remove whose every
// segment is an object key.
func plainPath(op Operation) ([]string, bool) {
	if op.Op != "add" && op.Op != "replace" && op.Op != "remove" {
		return nil, false
	}
	s, ok := segments(op.Path)
	return s, ok && isPlain(s)
}

// segments splits a JSON pointer. It refuses pointers that json-patch
// resolves otherwise than segment by segment (an empty segment stands for
// its parent) or whose escapes have several spellings, so that equal
// segments mean the same place.
func segments(p string) ([]string, bool) {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "~") {
		return nil, false
	}
	s := strings.Split(p[1:], "/")
	for _, seg := range s {
		if seg == "" {
			return nil, false
		}
	}
	return s, true
}

// isPlain: no segment could be an array index.
func isPlain(segs []string) bool {
	for _, seg := range segs {
		if isIndex(seg) {
			return false
		}
	}
	return true
}

// isIndex: json-patch reads the segment as an array index where it can
// (strconv.Atoi, so "+1" and "-1" too) and creates arrays for it.
func isIndex(seg string) bool {
	_, err := strconv.Atoi(seg)
	return err == nil || seg == "-"
}

func hasPrefix(s, prefix []string) bool {
	return len(s) >= len(prefix) && commonPrefix(s, prefix) == len(prefix)
}

func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
