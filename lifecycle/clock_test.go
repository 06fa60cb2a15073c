package lifecycle

import "github.com/addonops/addon-operator/internal/testclock"

// manualClock is a clock that moves only when the test advances it.
type manualClock = testclock.Manual

func newManualClock() *manualClock { return testclock.New() }
