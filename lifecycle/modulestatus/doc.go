// Package modulestatus writes one Module object (modules.addonops.io) per
// module of the running tree, in the operator's namespace, so kubectl get,
// kubectl wait and the tools that read kstatus conditions see what /status
// shows (docs/operator.md, "Module objects").
//
// It is a part beside "main": Writer.Run follows runstate's Trees and
// Modules announcements (and re-reads health and drift on an interval, as
// they announce nothing), batches what changed into at most one pass per
// Options.MinInterval, and writes an object's status only when it changed.
// No step calls it, so it adds nothing to a converge's critical path.
// Objects of modules that left the tree are deleted.
package modulestatus
