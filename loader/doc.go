// Package loader reads one checked-out tree into an immutable model: global
// hooks, modules in order, each hook's binding configuration (from running
// it with --config), values files, OpenAPI schemas, enabled scripts and
// charts. Bad input is an error that names the file; a tree that fails to
// load yields no model, so the caller keeps the one it has.
package loader
