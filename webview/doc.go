// Package webview is the operator's read-only web view under /ui/ on the
// listen address (docs/operator.md, "Web view"): the modules by weight
// with their state, health and drift, a module's page, the revision and
// its history, the queues, each page refreshed in place every few seconds.
//
// It shows what /status shows and nothing else: every page is built from
// the operator's own /status answer, asked in-process with the client's
// request, so statusapi's redaction applies as it does to /status. A
// module's live diff is served only to the clients /debug's guard admits
// (statusapi.LocalOnly, docs/security.md, "Who sees what"). It imports
// nothing of the operator's: cmd hands it the API handler and the guard.
package webview
