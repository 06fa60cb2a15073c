// Package archtest holds the test that keeps the packages' walls
// (docs/architecture.md, "Packages"): which package may import which. The
// compiler refuses a cycle; this test refuses an import that points the
// wrong way before it can grow into one.
package archtest
