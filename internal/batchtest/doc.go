// Package batchtest builds, for tests, a small executable that speaks the
// batch hook protocol of module-sdk (`hook list`, `hook config`, `hook run
// ID`, `hook ready`, `hook check`; docs/operator.md, "Batch hooks"), so the
// loader and the operator are tested against a real compiled file rather
// than a script pretending to be one.
package batchtest
