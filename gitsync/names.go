package gitsync

import (
	"errors"
	"strings"
)

// checkName refuses a tree entry's name that git itself would not write
// and a crafted tree can carry: one that is no single path component ("",
// ".", "..", or holding "/" or NUL), which would write elsewhere than its
// place, and ".git" in any case, a repository (with its config: hooks,
// fsmonitor) for anything that runs git in the checkout.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("an empty name")
	case name == "." || name == "..":
		return errors.New("not a name")
	case strings.ContainsRune(name, '/'):
		return errors.New(`a name holding "/"`)
	case strings.ContainsRune(name, 0):
		return errors.New("a name holding NUL")
	case strings.EqualFold(name, ".git"):
		return errors.New("a .git entry")
	}
	return nil
}
