// Package testclock is the manual clock tests inject where the code takes
// Now and After functions: it moves only when the test advances it, so a
// test of retries, timeouts or polls waits on no wall time.
package testclock
