package fleet_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the property tests with more cases than rapid's default of 100,
// unless -rapid.checks is given; the package still finishes in seconds.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	if !given {
		_ = flag.Set("rapid.checks", "1000")
	}
	os.Exit(m.Run())
}
