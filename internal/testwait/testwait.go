// Package testwait is the polling tests use instead of sleeps: a
// condition checked every millisecond until it holds or a deadline
// passes. For tests only.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds Until.
const Timeout = 10 * time.Second

// Until polls cond every millisecond until it holds, and fails the test
// naming what it waited for after Timeout.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
