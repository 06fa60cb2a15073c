package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is one control plane for a test binary, started by the first
// test that asks for it, so that tests of the same package that need no
// API server (unit tests of the steps, with in-memory fakes) run without
// starting etcd. Its Main stops it after the tests.
type Shared struct {
	// Setup, if set, runs once after the control plane started (to make
	// the package's clients).
	Setup func(*ControlPlane)
	// Options are Start's (WithWorkloads for tests whose pods must start).
	Options []Option

	once sync.Once
	cp   *ControlPlane
	err  error
}

// Get starts the control plane on first use; a start that failed fails
// every test that needs it.
func (s *Shared) Get(t testing.TB) *ControlPlane {
	t.Helper()
	s.once.Do(func() {
		s.cp, s.err = Start(context.Background(), s.Options...)
		if s.err == nil && s.Setup != nil {
			s.Setup(s.cp)
		}
	})
	if s.err != nil {
		t.Fatalf("start the control plane: %v", s.err)
	}
	return s.cp
}

// Main runs the tests and stops the control plane if one was started.
func (s *Shared) Main(m interface{ Run() int }) int {
	code := m.Run()
	if s.cp != nil {
		s.cp.Stop()
	} else if s.err != nil {
		fmt.Fprintln(os.Stderr, s.err)
	}
	return code
}
