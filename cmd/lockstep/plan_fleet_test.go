package main

import (
	"os"
	"path/filepath"
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

// --late and --lose rehearse members that report late and a member lost:
// the header names them, and the result says what became of the lost one.
func TestPlan_FederatedWorkloadLateAndLostMembers(t *testing.T) {
	next := fleetVariant(t, "weight: 2", "weight: 1")
	code, out, errOut := plan(t, "", "-f", fleetExample, "-f", next, "--startup", "20s",
		"--cluster", "eu-1:region=eu", "--cluster", "eu-2:region=eu", "--cluster", "us-1:region=us",
		"--late", "eu-2=1", "--lose", "us-1@2")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"  shares: eu-1 3 → 2, eu-2 3 → 2, us-1 4 → 6\n",
		"  late: eu-2's status reaches the hub 1 round late (--late eu-2=1)\n",
		"  lost: us-1 is unreachable to the hub from wave 2 on (--lose us-1@2); memberLostTimeoutSeconds 5m0s\n",
		"stale, charged",
		"  us-1: unreachable from wave 2, holding a share of 5; lost at wave 17 and written off",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Bad --late and --lose are refused with exit 2, naming the flag, the value
// and the rule.
func TestPlan_FederatedWorkloadRefusesBadLateAndLose(t *testing.T) {
	next := fleetVariant(t, "web:v1", "web:v2")
	clusters := []string{"--cluster", "eu-1:region=eu", "--cluster", "us-1:region=us"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"lose without a wave", []string{"--lose", "us-1"}, `--lose "us-1": want CLUSTER@WAVE`},
		{"lose without a cluster", []string{"--lose", "@2"}, `--lose "@2": want CLUSTER@WAVE`},
		{"lose at wave 0", []string{"--lose", "us-1@0"}, `--lose "us-1@0": WAVE must be a whole number, at least 1 (waves count from 1)`},
		{"lose at no number", []string{"--lose", "us-1@soon"}, `--lose "us-1@soon": WAVE must be a whole number, at least 1`},
		{"lose an unknown cluster", []string{"--lose", "ap-1@2"}, `--lose "ap-1@2": cluster "ap-1" is not one the workload is placed on (eu-1, us-1)`},
		{"lose twice", []string{"--lose", "us-1@2", "--lose", "us-1@3"}, `--lose "us-1@3": cluster us-1 is given twice`},
		{"late without rounds", []string{"--late", "eu-1"}, `--late "eu-1": want CLUSTER=N`},
		{"late by 0", []string{"--late", "eu-1=0"}, `--late "eu-1=0": N must be a whole number of rounds, at least 1`},
		{"late an unknown cluster", []string{"--late", "ap-1=1"}, `--late "ap-1=1": cluster "ap-1" is not one the workload is placed on (eu-1, us-1)`},
		{"late on a PodCliqueSet", nil, "--late and --lose apply to FederatedWorkloads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-f", fleetExample, "-f", next}, append(clusters, tt.args...)...)
			if tt.args == nil {
				args = []string{"-f", disaggregated, "-f", newImage(t), "--late", "decode=1"}
			}
			code, out, errOut := plan(t, "", args...)
			if code != 2 || !strings.Contains(errOut, "lockstep plan: "+tt.want) {
				t.Fatalf("exit %d, want 2 and %q on stderr\n%s\n%s", code, tt.want, out, errOut)
			}
		})
	}
}

// A cluster given to --lose that the Placement does not select is refused
// as one the workload is not placed on.
func TestPlan_FederatedWorkloadLoseNamesOnlyPlacedClusters(t *testing.T) {
	data, err := os.ReadFile(fleetVariant(t, "web:v1", "web:v2"))
	if err != nil {
		t.Fatal(err)
	}
	withPlacement := filepath.Join(t.TempDir(), "web-v2.yaml")
	data = append(data, []byte(`---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: Placement
metadata: {name: gpu-clusters, namespace: default}
spec:
  clusterSelector: {matchLabels: {region: eu}}
`)...)
	if err := os.WriteFile(withPlacement, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := plan(t, "", "-f", fleetExample, "-f", withPlacement,
		"--cluster", "eu-1:region=eu", "--cluster", "us-1:region=us", "--lose", "us-1@2")
	if want := `--lose "us-1@2": cluster "us-1" is not one the workload is placed on (eu-1)`; code != 2 || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, want 2 and %q\n%s\n%s", code, want, out, errOut)
	}
}
