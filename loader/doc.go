// Package loader reads one checked-out tree into an immutable model: global
// hooks, modules in order, each hook's binding configuration (from running
// it with --config), values files, OpenAPI schemas, enabled scripts and
// charts. Bad input is an error that names the file; a tree that fails to
// load yields no model, so the caller keeps the one it has.
//
// The tree comes from a git repository, the operator's trust boundary, so
// every read resolves beneath the tree's root through os.Root: no link, nor
// chain of links, leads a read out of it. Only regular files and
// directories are read; files read whole are bounded in size, hashing
// streams, and the load's context bounds it all, so a FIFO, a device or a
// huge file cannot hold a load past its deadline. What a hook prints for
// --config is bounded too, and the --config cache keeps only the configs
// of the trees loaded last.
package loader
