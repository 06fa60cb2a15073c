// Command addon-operator is the operator's binary: `start` (the default)
// runs it, the other subcommands (render, diff, module, source, debug...)
// ask a running one or preview a tree. It owns flags, environment fallbacks
// and wiring only: each part's logic lives in its package (cli.go holds the
// command tree, docs/architecture.md "Who owns what" the packages).
package main
