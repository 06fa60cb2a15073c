// Command methodcount lists the named types of the module with more methods
// than the project allows (docs/architecture.md, "Who owns what"): every
// method counts, exported or not, on T and *T. Above -max a type needs a
// reason in its doc comment (a line starting "Cohesive:"); above -hard
// nothing passes. `make lint` runs it from the module root.
//
// It reads the syntax alone (go/parser), so it needs no build and no
// dependency: a method is a FuncDecl whose receiver names the type, in the
// non-test files of the type's directory.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	max := flag.Int("max", 15, "methods a type may have without a reason")
	hard := flag.Int("hard", 20, "methods no type may exceed")
	tests := flag.Bool("tests", false, "count the types of _test.go files too")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	os.Exit(run(os.Stdout, root, limits{Max: *max, Hard: *hard, Tests: *tests, Pending: pending}))
}

func run(w io.Writer, root string, l limits) int {
	types, err := count(root, l.Tests)
	if err != nil {
		fmt.Fprintln(w, "methodcount:", err)
		return 2
	}
	failed := false
	for _, f := range judge(types, l) {
		fmt.Fprintln(w, f)
		if f.Verdict == tooMany || f.Verdict == noReason {
			failed = true
		}
	}
	if failed {
		fmt.Fprintf(w, "methodcount: split the types above (at most %d methods, %d with a \"Cohesive:\" reason in the doc comment)\n", l.Max, l.Hard)
		return 1
	}
	return 0
}
