// Package proptest sets how many cases the property tests (pgregory.net/rapid)
// of a package run: more than rapid's default of 100, so that `go test` in CI
// checks the invariants thousands of times, unless -rapid.checks is given on
// the command line (the long runs of make bench-fleet give more).
package proptest

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// Main is a package's TestMain: it runs the tests with checks cases per
// property unless -rapid.checks was given.
func Main(m *testing.M, checks int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	if !given {
		_ = flag.Set("rapid.checks", strconv.Itoa(checks))
	}
	os.Exit(m.Run())
}
