package main

import (
	"strings"
	"testing"
)

// New weights alone are something to roll: the hub moves units between the
// members within the budgets, and the plan plays it; a strategy change on the
// same template moves nothing, and the plan says so.
func TestPlan_FederatedWorkloadPlaysWhatTheHubWouldDo(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"new weights", "weight: 2", "weight: 3", "no unit changes revision, the shares move"},
		{"a partition on the same template", "maxSurge: 1", "maxSurge: 1\n    partition: 4", "Result: Nothing moves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := plan(t, "", "-f", fleetExample, "-f", fleetVariant(t, tt.from, tt.to),
				"--cluster", "eu-1:region=eu", "--cluster", "us-1:region=us")
			if code != 0 || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want 0 and %q\n%s\n%s", code, tt.want, out, errOut)
			}
		})
	}
}
