package values

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GlobalKey is the values section every hook and chart sees.
const GlobalKey = "global"

// EnabledSuffix turns a module key into its enable flag (simpleModule → simpleModuleEnabled).
const EnabledSuffix = "Enabled"

var (
	moduleDirRe  = regexp.MustCompile(`^(?:([0-9]+)-)?(.+)$`)
	moduleNameRe = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
)

// UnnumberedOrder is the order of a module directory without a numeric
// prefix: 1, the original addon-operator's default, so such a module runs
// with the modules of weight 1, in name order.
const UnnumberedOrder = 1

// ParseModuleDir splits a module directory name into its order (the numeric
// prefix, UnnumberedOrder when absent) and its module name
// (001-simple-module → 1, simple-module).
func ParseModuleDir(dir string) (order int, name string, err error) {
	m := moduleDirRe.FindStringSubmatch(dir)
	if m == nil {
		return 0, "", fmt.Errorf("module directory %q: no module name", dir)
	}
	order = UnnumberedOrder
	if m[1] != "" {
		order, err = strconv.Atoi(m[1])
		if err != nil {
			return 0, "", fmt.Errorf("module directory %q: order %q: %w", dir, m[1], err)
		}
	}
	return order, m[2], nil
}

// ModuleKey converts a kebab-case module name to the camelCase key of its
// values section (simple-module → simpleModule). The conversion must round-trip
// through ModuleName; names it cannot, such as a-2fa, a--b or Upper, are an error.
func ModuleKey(name string) (string, error) {
	if !moduleNameRe.MatchString(name) {
		return "", fmt.Errorf("module name %q: want lowercase letters and digits in dash-separated words, starting with a letter", name)
	}
	parts := strings.Split(name, "-")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		b.WriteString(strings.ToUpper(p[:1]))
		b.WriteString(p[1:])
	}
	key := b.String()
	if back := ModuleName(key); back != name {
		return "", fmt.Errorf("module name %q: its values key %q converts back to %q; rename the module so that each dash is followed by a letter", name, key, back)
	}
	return key, nil
}

// ModuleName converts a camelCase values key back to the kebab-case module
// name, which is also the Helm release name (simpleModule → simple-module).
func ModuleName(key string) string {
	var b strings.Builder
	for i, r := range key {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// EnabledKey is the key of a module's enable flag.
func EnabledKey(moduleKey string) string { return moduleKey + EnabledSuffix }
