package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Whatever target the PodCliqueSet level decides, the child spec it writes
// decodes to the same target and plans with the same policy.
func TestEncodeTarget_RoundTripsThroughTheChildSpec(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// three set revisions; the role's template changes between some of them
		hashes := rapid.SliceOfN(rapid.SampledFrom([]string{"r1", "r2", "r3"}), 3, 3).Draw(t, "roleHashes")
		sets := make([]SetRevision, 3)
		for i := range sets {
			sets[i] = SetRevision{Name: []string{"s1", "s2", "s3"}[i], Roles: []RoleRevision{{Role: "decode", Revision: hashes[i]}}}
		}
		revs := Revisions{History: sets[:1], Current: sets[1], Update: sets[2]}
		cur := rapid.IntRange(0, 2).Draw(t, "current")
		want := Target{
			Type:            rapid.SampledFrom([]v1alpha1.UpdateStrategyType{v1alpha1.RollingUpdateStrategyType, v1alpha1.OnDeleteStrategyType}).Draw(t, "type"),
			SetRevision:     revs.Update.Name,
			UpdateRevision:  hashes[2],
			CurrentRevision: hashes[cur],
		}
		if rapid.Bool().Draw(t, "capped") {
			want.MaxUpdated = ptr.To(rapid.Int32Range(0, 8).Draw(t, "maxUpdated"))
		}
		limits := &v1alpha1.ComponentUpdateStrategy{MaxSurge: ptr.To(intstr.FromString("25%"))}
		replicas := rapid.Int32Range(1, 8).Draw(t, "replicas")

		replacement := rapid.SampledFrom([]v1alpha1.PodReplacementPolicy{"", v1alpha1.TerminationStarted, v1alpha1.TerminationComplete}).Draw(t, "replacement")
		surge := rapid.SampledFrom([]v1alpha1.SurgePlacement{"", v1alpha1.AboveReplicas, v1alpha1.ReplacedIndex}).Draw(t, "surge placement")
		spec := EncodeTarget(want, revs, "decode", limits, replicas, PodRules{Replacement: replacement, Surge: surge})
		got := DecodeTarget(spec, want.UpdateRevision, "decode", revs)
		if got.Type != want.Type || got.SetRevision != want.SetRevision || got.UpdateRevision != want.UpdateRevision ||
			got.CurrentRevision != want.CurrentRevision || !equalPtr(got.MaxUpdated, want.MaxUpdated) {
			t.Fatalf("decoded %+v, want %+v (spec %+v)", *got, want, spec)
		}
		p := decodePolicy(spec, KindGroup, want.UpdateRevision, "decode", revs)
		if p.Replicas != replicas || p.Type != want.Type || p.CurrentRevision != want.CurrentRevision || p.UpdateOrder != LowestIndexFirst {
			t.Fatalf("policy %+v from spec %+v", p, spec)
		}
		if want.Type == v1alpha1.RollingUpdateStrategyType && (p.MaxSurge.String() != "25%" || p.MaxUnavailable.String() != "1") {
			t.Fatalf("policy limits %s/%s, want 1/25%%", p.MaxUnavailable.String(), p.MaxSurge.String())
		}
		// a clique replaces while terminating exactly under TerminationStarted; a group never does
		// and places its surge at the replaced index exactly when it also asks for that
		if p.ReplaceWhileTerminating || p.SurgeAtReplacedIndex {
			t.Fatalf("a scaling group's policy replaces while terminating or surges at a replaced index (spec %+v)", spec)
		}
		c := decodePolicy(spec, KindClique, want.UpdateRevision, "decode", revs)
		if c.ReplaceWhileTerminating != (replacement == v1alpha1.TerminationStarted) {
			t.Fatalf("clique policy ReplaceWhileTerminating %v under %q", c.ReplaceWhileTerminating, replacement)
		}
		if c.SurgeAtReplacedIndex != (replacement == v1alpha1.TerminationStarted && surge == v1alpha1.ReplacedIndex) {
			t.Fatalf("clique policy SurgeAtReplacedIndex %v under %q and %q", c.SurgeAtReplacedIndex, replacement, surge)
		}
	})
}

func equalPtr(a, b *int32) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// A child scaled through /scale keeps its replicas until the template changes.
func TestChildReplicas_ScaleWinsUntilTheTemplateChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		observed *ChildReplicasObservation
		template int32
		want     int32
	}{
		{"not created yet", nil, 3, 3},
		{"scaled by an HPA", &ChildReplicasObservation{Spec: 5, Template: 3}, 3, 5},
		{"template changed since", &ChildReplicasObservation{Spec: 5, Template: 3}, 4, 4},
	} {
		if got := ChildReplicas(tc.observed, tc.template); got != tc.want {
			t.Errorf("%s: ChildReplicas = %d, want %d", tc.name, got, tc.want)
		}
	}
}
