package kube

import (
	"log/slog"
	"runtime/debug"
)

// recoverPanic, deferred in a callback that runs on a watch's goroutine,
// logs a panic instead of ending the process: the watch goes on, and a
// bug in one handler does not take down every module.
func recoverPanic(where string) {
	if r := recover(); r != nil {
		slog.Error("panic in a watch callback; continuing", "where", where, "panic", r, "stack", string(debug.Stack()))
	}
}
