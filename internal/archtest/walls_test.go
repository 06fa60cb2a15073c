package archtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/addonops/addon-operator/"

// imports is every package of the module with the module's packages it
// imports directly, names relative to the module.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	// a package's tests count as the package: a part's test that imports
	// another part breaks the wall as its code would
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}", module+"...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], module)
		got[pkg] = nil
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				got[pkg] = append(got[pkg], rel)
			}
		}
	}
	return got
}

// leaves of lifecycle: the parts every other part may import.
var leaves = map[string]bool{
	"lifecycle/runstate": true,
	"lifecycle/metrics":  true,
	"lifecycle/taskkind": true,
}

// parts that may import another part (besides the leaves), and which.
var allowed = map[string][]string{
	"preview": {"lifecycle/hookrun"},
	// the HTTP layer maps drift's sentinel errors to codes and serves its
	// status type as it is
	"lifecycle/statusapi": {"lifecycle/driftcheck"},
}

// fleetLeaves are the fleet's groundwork packages (docs/architecture.md,
// "Fleets (groundwork)") and the only packages of ours each may import.
var fleetLeaves = map[string][]string{
	"changewindow": nil,
	"ring":         {"commitstatus"},
}

// viewLeaves import nothing of ours: the web view reads what /status
// answers through the API handler cmd gives it (docs/architecture.md).
var viewLeaves = map[string]bool{"webview": true}

func isFleetLeaf(pkg string) bool { _, ok := fleetLeaves[pkg]; return ok }

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func TestImportWalls(t *testing.T) {
	t.Parallel()
	all := imports(t)
	if len(all) < 10 {
		t.Fatalf("go list found %d packages", len(all))
	}
	for pkg, imps := range all {
		for _, imp := range imps {
			if reason := wrong(pkg, imp); reason != "" {
				t.Errorf("%s imports %s: %s", pkg, imp, reason)
			}
		}
	}
}

// wrong says why pkg must not import imp ("" when it may).
func wrong(pkg, imp string) string {
	switch {
	case under(imp, "cmd") && !under(pkg, "cmd"):
		return "only cmd wires; nothing imports it"
	case imp == "lifecycle" && !under(pkg, "cmd"):
		return "lifecycle is the facade cmd wires: its parts and the layers below never import it"
	case under(imp, "lifecycle") && !under(pkg, "lifecycle") && !under(pkg, "cmd") && pkg != "preview":
		return "a layer below lifecycle must not reach into it"
	case leaves[pkg] && under(imp, "lifecycle"):
		return "a leaf of lifecycle imports no other part of it"
	case strings.HasPrefix(pkg, "lifecycle/") && strings.HasPrefix(imp, "lifecycle/") && !leaves[imp] && !contains(allowed[pkg], imp):
		return "parts of lifecycle reach each other through consumer-side interfaces, not imports"
	case pkg == "preview" && strings.HasPrefix(imp, "lifecycle/") && !leaves[imp] && !contains(allowed[pkg], imp):
		return "previews import only the enabled-script runner and the leaves"
	case isFleetLeaf(pkg) && !contains(fleetLeaves[pkg], imp) && !under(imp, "internal"):
		return "a fleet leaf imports of ours only what fleetLeaves names (and test helpers)"
	case viewLeaves[pkg]:
		return "the web view imports nothing of ours: it reads /status through the handler cmd gives it"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The rules refuse what they are there to refuse.
func TestWrongRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pkg, imp string
		refused  bool
	}{
		{"gitsync", "lifecycle", true},
		{"kube", "lifecycle/runstate", true},
		{"lifecycle/binding", "lifecycle", true},
		{"lifecycle/binding", "lifecycle/hookrun", true},
		{"lifecycle/runstate", "lifecycle/metrics", true},
		{"lifecycle", "cmd/addon-operator", true},
		{"preview", "lifecycle/binding", true},
		{"preview", "lifecycle", true},
		{"lifecycle/binding", "lifecycle/runstate", false},
		{"lifecycle", "lifecycle/binding", false},
		{"preview", "lifecycle/hookrun", false},
		{"cmd/addon-operator", "lifecycle", false},
		{"cmd/addon-operator", "preview", false},
		{"lifecycle/statusapi", "lifecycle/driftcheck", false},
		{"lifecycle/statusapi", "lifecycle/binding", true},
		{"lifecycle/driftcheck", "lifecycle/statusapi", true},
		{"ring", "commitstatus", false},
		{"ring", "internal/forgetest", false},
		{"ring", "loader", true},
		{"changewindow", "loader", true},
		{"changewindow", "commitstatus", true},
		{"webview", "lifecycle/statusapi", true},
		{"webview", "health", true},
		{"cmd/addon-operator", "webview", false},
	} {
		if got := wrong(c.pkg, c.imp) != ""; got != c.refused {
			t.Errorf("%s -> %s: refused %v, want %v", c.pkg, c.imp, got, c.refused)
		}
	}
}
