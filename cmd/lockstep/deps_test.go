package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The one binary is the operator, the hub and the kubectl plugin. Go's plugin
// package makes the linker keep every exported method of every type; linked
// in once (cli-runtime's resource builder brought it, through kustomize), it
// made the binary 86 MB instead of 52, and the kernel keeps the binary's
// pages resident: the idle operator's RSS was 63 MiB instead of 40.
func TestBinary_DoesNotLinkGoPlugins(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, forbidden := range []string{"plugin", "sigs.k8s.io/kustomize/api/krusty"} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("cmd/lockstep links %s", forbidden)
		}
	}
}
