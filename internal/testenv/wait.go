package testenv

import (
	"testing"
	"time"
)

// pollInterval is how often Eventually looks again.
const pollInterval = 50 * time.Millisecond

// Eventually polls cond until it holds, failing the test with what was awaited
// and cond's last word about the state once timeout passes. It is a deadline on
// a condition, not a sleep: it returns as soon as cond holds.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(pollInterval)
	}
}
