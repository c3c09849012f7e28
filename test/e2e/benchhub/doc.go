//go:build !e2e

// Without the e2e tag this package is only a pointer to the real program, so
// that `go build ./...` and `go vet ./...` see a whole main package here.

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "benchhub is built with -tags e2e: run it with `make bench-hub`")
	os.Exit(2)
}
