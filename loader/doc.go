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
//
// # Where things are
//
// loader.go holds the Loader and Load, model.go the model it returns and
// diff.go the comparison of two models. dirs.go opens the configured
// directories, tree.go reads beneath a root, modules.go and global.go read
// the modules and the global hooks directory, walk.go finds hook files,
// hash.go hashes what was read, and values.go reads values files and
// schemas. configs.go runs hooks with --config through the cache in
// cache.go; hookconfig.go (with hookconfig_v0.go, hookconfig_v1.go and
// crontab.go) parses what they print. batch.go asks compiled executables
// `hook config` and turns a batch executable into the hooks it holds.
package loader
