// Package helmtest reads and writes Helm releases where the operator keeps
// them (Helm's Secrets storage in its namespace), so tests can check the
// operator's releases and plant releases of other tools without a test-only
// API on the operator's Helm client. It stands apart from testenv so that
// the devcluster binary does not link Helm.
package helmtest
