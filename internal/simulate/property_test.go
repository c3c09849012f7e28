package simulate

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Whole rollouts over random shapes, strategies and events. The simulator's
// checker asserts the invariants on every plan and state; these tests add that a
// rollout without faults completes, with indices [0, replicas) on the newest
// revision, in a bounded number of plans.

func drawComponentLimits(t *rapid.T, label string) *v1alpha1.ComponentUpdateStrategy {
	if rapid.Bool().Draw(t, label+" default") {
		return nil
	}
	draw := func(l string) intstr.IntOrString {
		if rapid.Bool().Draw(t, l+" percent") {
			return intstr.FromString(fmt.Sprintf("%d%%", rapid.SampledFrom([]int{0, 25, 39, 50, 100}).Draw(t, l+" pct")))
		}
		return intstr.FromInt(rapid.IntRange(0, 2).Draw(t, l))
	}
	u, s := draw(label+" maxUnavailable"), draw(label+" maxSurge")
	if u.String() == "0" || u.String() == "0%" {
		if s.String() == "0" || s.String() == "0%" {
			s = intstr.FromInt(1) // the webhook rejects 0/0
		}
	}
	return &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: &u, MaxSurge: &s}
}

// drawSpec draws a valid, defaulted PodCliqueSet spec.
func drawSpec(t *rapid.T) *v1alpha1.PodCliqueSetSpec {
	replicas := int32(rapid.IntRange(1, 3).Draw(t, "pcs replicas"))
	strategy := rapid.SampledFrom([]v1alpha1.UpdateStrategyType{
		v1alpha1.RollingUpdateStrategyType, v1alpha1.RollingUpdateStrategyType, v1alpha1.ReplicaRecreateStrategyType, v1alpha1.OnDeleteStrategyType,
	}).Draw(t, "strategy")
	componentLimits := strategy == v1alpha1.RollingUpdateStrategyType
	var cliques []v1alpha1.PodCliqueTemplateSpec
	var groups []v1alpha1.PodCliqueScalingGroupConfig
	var roles []string
	for i := range rapid.IntRange(1, 2).Draw(t, "standalone cliques") {
		r := int32(rapid.IntRange(1, 4).Draw(t, "clique replicas"))
		c := clq(fmt.Sprintf("c%d", i), r, minAvail(int32(rapid.IntRange(1, int(r)).Draw(t, "clique minAvailable"))))
		if componentLimits {
			c.UpdateStrategy = drawComponentLimits(t, "clique")
		}
		cliques = append(cliques, c)
		roles = append(roles, c.Name)
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "groups") {
		r := int32(rapid.IntRange(1, 3).Draw(t, "group replicas"))
		var names []string
		for j := range rapid.IntRange(1, 2).Draw(t, "members") {
			n := fmt.Sprintf("g%dm%d", i, j)
			cliques = append(cliques, clq(n, int32(rapid.IntRange(1, 2).Draw(t, "member replicas"))))
			names = append(names, n)
		}
		g := grp(fmt.Sprintf("g%d", i), r, int32(rapid.IntRange(1, int(r)).Draw(t, "group minAvailable")), names...)
		if componentLimits {
			g.UpdateStrategy = drawComponentLimits(t, "group")
		}
		groups = append(groups, g)
		roles = append(roles, g.Name)
	}
	spec := pcs(replicas, cliques, groups...)
	st := v1alpha1.PodCliqueSetUpdateStrategy{Type: strategy}
	if strategy == v1alpha1.ReplicaRecreateStrategyType {
		u := rapid.IntRange(0, int(replicas)).Draw(t, "pcs maxUnavailable")
		s := rapid.IntRange(0, 2).Draw(t, "pcs maxSurge")
		if u == 0 && s == 0 {
			s = 1
		}
		st = recreate(u, s)
	}
	if rapid.IntRange(0, 3).Draw(t, "use partition") == 0 {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{}
		}
		st.RollingUpdate.Partition = ptr.To(int32(rapid.IntRange(0, int(replicas)).Draw(t, "partition")))
	}
	if strategy == v1alpha1.RollingUpdateStrategyType && rapid.Bool().Draw(t, "role steps") {
		st.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: drawSteps(t, spec, roles)}
	}
	spec.PodReplacementPolicy = rapid.SampledFrom([]v1alpha1.PodReplacementPolicy{v1alpha1.TerminationStarted, v1alpha1.TerminationComplete}).Draw(t, "pod replacement")
	spec.SurgePlacement = v1alpha1.AboveReplicas
	if spec.PodReplacementPolicy == v1alpha1.TerminationStarted && rapid.Bool().Draw(t, "surge at the replaced index") {
		spec.SurgePlacement = v1alpha1.ReplacedIndex
	}
	return withStrategy(spec, st)
}

// drawSteps draws role steps whose updateTo never decreases for a role.
func drawSteps(t *rapid.T, spec *v1alpha1.PodCliqueSetSpec, roles []string) []v1alpha1.RoleUpgradeStep {
	reached := map[string]int32{}
	var steps []v1alpha1.RoleUpgradeStep
	for range rapid.IntRange(1, 4).Draw(t, "steps") {
		role := rapid.SampledFrom(roles).Draw(t, "step role")
		replicas := int32(0)
		if c := spec.Template.Clique(role); c != nil {
			replicas = c.Replicas
		} else if g := spec.Template.ScalingGroup(role); g != nil {
			replicas = g.Replicas
		}
		n := int32(rapid.IntRange(int(max(reached[role], 1)), int(replicas)).Draw(t, "updateTo"))
		reached[role] = n
		to := intstr.FromInt32(n)
		if n == replicas && rapid.Bool().Draw(t, "as 100%") {
			to = intstr.FromString("100%")
		}
		steps = append(steps, v1alpha1.RoleUpgradeStep{Role: role, UpdateTo: to})
	}
	return steps
}

func drawChanged(t *rapid.T, spec *v1alpha1.PodCliqueSetSpec, label string) []string {
	var roles []string
	for _, c := range spec.Template.Cliques {
		roles = append(roles, c.Name)
	}
	for _, g := range spec.Template.PodCliqueScalingGroups {
		roles = append(roles, g.Name)
	}
	var keep []string
	for _, r := range roles {
		if rapid.Bool().Draw(t, label+" keeps "+r) {
			keep = append(keep, r)
		}
	}
	return keep
}

// drawRollout draws a rollout of spec to a new revision (some roles kept),
// with random start-up times, jitter, seed and grace.
func drawRollout(t *rapid.T, spec *v1alpha1.PodCliqueSetSpec) Scenario {
	v1 := revision("v1", spec, nil)
	v2 := revision("v2", spec, &v1, drawChanged(t, spec, "v2")...)
	return Scenario{From: spec, FromRevision: v1, To: spec, ToRevision: v2,
		Startup: time.Duration(rapid.IntRange(1, 30).Draw(t, "startup s")) * time.Second,
		Jitter:  rapid.Float64Range(0, 1).Draw(t, "jitter"),
		Seed:    rapid.Uint64().Draw(t, "seed"),
		Grace:   time.Duration(rapid.IntRange(0, 5).Draw(t, "grace s")) * time.Second,
	}
}

// drawScenario draws a rollout with events; it reports whether a fault was injected.
func drawScenario(t *rapid.T) (Scenario, bool) {
	spec := drawSpec(t)
	sc := drawRollout(t, spec)
	v2 := sc.ToRevision
	at := func(label string) time.Duration {
		return time.Duration(rapid.IntRange(0, 120).Draw(t, label)) * time.Second
	}
	current := spec
	if rapid.Bool().Draw(t, "new revision mid-rollout") {
		v3 := revision("v3", spec, &v2, drawChanged(t, spec, "v3")...)
		sc.Changes = append(sc.Changes, Change{At: at("v3 at"), Revision: &v3})
	}
	if rapid.Bool().Draw(t, "replicas change mid-rollout") {
		scaled := current.DeepCopy()
		scaled.Replicas = ptr.To(int32(rapid.IntRange(0, 4).Draw(t, "new pcs replicas")))
		sc.Changes = append(sc.Changes, Change{At: at("scale at"), Spec: scaled})
		current = scaled
	}
	if rapid.IntRange(0, 3).Draw(t, "pause") == 0 {
		paused := current.DeepCopy()
		paused.Paused = true
		from := at("pause at")
		resumed := current.DeepCopy()
		sc.Changes = append(sc.Changes, Change{At: from, Spec: paused},
			Change{At: from + time.Duration(rapid.IntRange(1, 60).Draw(t, "pause for s"))*time.Second, Spec: resumed})
	}
	slices.SortStableFunc(sc.Changes, func(a, b Change) int { return int(a.At - b.At) })
	for range rapid.IntRange(0, 3).Draw(t, "hand deletions") {
		c := rapid.SampledFrom(spec.Template.Cliques).Draw(t, "deleted clique")
		d := Deletion{At: at("deletion at"), Replica: int32(rapid.IntRange(0, 2).Draw(t, "deleted replica")), Role: c.Name,
			Index: int32(rapid.IntRange(0, int(c.Replicas)).Draw(t, "deleted index"))}
		if g := spec.Template.ScalingGroupOf(c.Name); g != nil {
			d.Group, d.GroupReplica = g.Name, int32(rapid.IntRange(0, int(g.Replicas)).Draw(t, "deleted group replica"))
		}
		sc.Deletions = append(sc.Deletions, d)
	}
	faulty := rapid.IntRange(0, 4).Draw(t, "fault") == 0
	if faulty {
		c := rapid.SampledFrom(spec.Template.Cliques).Draw(t, "faulty clique")
		sc.Faults = []Fault{{Role: c.Name, After: rapid.IntRange(1, 3).Draw(t, "faulty after")}}
	}
	sc.MaxSteps = 4000
	return sc, faulty
}

func TestRollout_InvariantsHoldAndRolloutsComplete(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc, faulty := drawScenario(t)
		res := Run(sc)
		if res.Outcome.Kind == Violation {
			t.Fatalf("violation: %s\n%s", res.Outcome.Reason, strings.Join(lines(res, all), "\n"))
		}
		onDelete := sc.To.UpdateStrategy.Type == v1alpha1.OnDeleteStrategyType
		if !faulty && !onDelete && res.Outcome.Kind != Complete {
			t.Fatalf("without faults the rollout must complete; got %s: %s\n%s", res.Outcome.Kind, res.Outcome.Reason, strings.Join(lines(res, all), "\n"))
		}
		if res.Outcome.Kind == Complete && res.Summary.Steps > 2000 {
			t.Fatalf("completed after %d plans; want a bounded number", res.Summary.Steps)
		}
	})
}

// OnDelete rollouts never delete for an update, and everything created runs the
// newest revision (no partition or pause drawn here).
func TestOnDelete_OnlyHandDeletedUnitsMove(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := drawSpec(t)
		spec = withStrategy(spec, v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.OnDeleteStrategyType})
		v1 := revision("v1", spec, nil)
		sc := Scenario{From: spec, FromRevision: v1, To: spec, ToRevision: revision("v2", spec, &v1), Startup: 5 * time.Second}
		for range rapid.IntRange(0, 4).Draw(t, "hand deletions") {
			if gs := spec.Template.PodCliqueScalingGroups; len(gs) > 0 && rapid.Bool().Draw(t, "delete a group replica") {
				g := rapid.SampledFrom(gs).Draw(t, "group")
				sc.Deletions = append(sc.Deletions, Deletion{At: time.Duration(rapid.IntRange(0, 60).Draw(t, "at")) * time.Second, Role: g.Name,
					Replica: int32(rapid.IntRange(0, 2).Draw(t, "replica")), Index: int32(rapid.IntRange(0, int(g.Replicas)-1).Draw(t, "index"))})
				continue
			}
			c := rapid.SampledFrom(spec.Template.Cliques).Draw(t, "clique")
			d := Deletion{At: time.Duration(rapid.IntRange(0, 60).Draw(t, "at")) * time.Second, Role: c.Name,
				Replica: int32(rapid.IntRange(0, 2).Draw(t, "replica")), Index: int32(rapid.IntRange(0, int(c.Replicas)-1).Draw(t, "index"))}
			if g := spec.Template.ScalingGroupOf(c.Name); g != nil {
				d.Group, d.GroupReplica = g.Name, int32(rapid.IntRange(0, int(g.Replicas)-1).Draw(t, "group replica"))
			}
			sc.Deletions = append(sc.Deletions, d)
		}
		res := Run(sc)
		if res.Outcome.Kind == Violation {
			t.Fatalf("violation: %s", res.Outcome.Reason)
		}
		for i, a := range res.Timeline {
			if a.Op == OpDelete && !a.ByHand {
				t.Fatalf("OnDelete issued %s", a)
			}
			// a pod inside a group replica follows its group replica's revision
			memberOfOld := a.Group != "" && !slices.ContainsFunc(res.Timeline[:i], func(b Action) bool {
				return b.Level == LevelPodCliqueScalingGroup && b.Op == OpCreate && b.Replica == a.Replica && b.Role == a.Group && b.Index == a.GroupReplica
			})
			if a.Op == OpCreate && !strings.HasSuffix(a.To, "@v2") && !memberOfOld {
				t.Fatalf("OnDelete created %s, want the newest revision", a)
			}
		}
	})
}
