package clusterconfig

import (
	"fmt"
	"strings"
)

// Error names the file, the ConfigMap key and the line a problem is at
// (Key or Line empty when the problem is the whole file).
type Error struct {
	File string
	Key  string
	Line int
	Msg  string
	Err  error // the cause, e.g. a *secretfile.Error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %s", e.Key)
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(file, key string, line int, format string, args ...any) *Error {
	return &Error{File: file, Key: key, Line: line, Msg: fmt.Sprintf(format, args...)}
}
