package simulate

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/invariant"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// The checker hands each level's plan to the invariant rules: a plan past the
// limits is reported with the rule it breaks, a plan within them passes.
func TestCheckLevel_ReportsAPlanThatBreaksARule(t *testing.T) {
	surge := rollout.Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: 3, MaxSurge: intstr.FromInt(1), MaxUnavailable: intstr.FromInt(0)}
	onDelete := rollout.Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: 3}
	ready := func(indices ...int32) []rollout.Unit {
		var out []rollout.Unit
		for _, i := range indices {
			out = append(out, rollout.Unit{Index: i, Revision: "v1", Available: true, Ready: true})
		}
		return out
	}
	tests := []struct {
		name    string
		p       rollout.Policy
		units   []rollout.Unit
		creates []rollout.Create
		deletes []rollout.Delete
		want    invariant.Name
	}{
		{"one surge unit", surge, ready(0, 1, 2), []rollout.Create{{Index: 3, Surge: true}}, nil, ""},
		{"two surge units", surge, ready(0, 1, 2), []rollout.Create{{Index: 3}, {Index: 4}}, nil, invariant.UnitsWithinSurge},
		{"an update delete with no room", surge, ready(0, 1, 2), nil, []rollout.Delete{{Index: 0, Reason: rollout.ReasonUpdate}}, invariant.AvailabilityFloor},
		{"OnDelete scales in", onDelete, ready(0, 1, 2, 3), nil, []rollout.Delete{{Index: 3, Reason: rollout.ReasonScaleIn}}, ""},
		{"OnDelete deletes for an update", onDelete, ready(0, 1, 2), nil, []rollout.Delete{{Index: 0, Reason: rollout.ReasonReplaceFailed}}, invariant.OnDeleteNoUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkLevel("replica 0 clique c", tt.p, tt.units, tt.creates, tt.deletes)
			if tt.want == "" && got != "" || !strings.HasPrefix(got, string(tt.want)) {
				t.Fatalf("checkLevel = %q, want %q", got, tt.want)
			}
		})
	}
}
