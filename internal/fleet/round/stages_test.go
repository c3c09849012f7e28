package round

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
)

func TestDecisionGroups(t *testing.T) {
	decision := func(name, idx string, clusters ...string) fleetv1alpha1.PlacementDecision {
		d := fleetv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			fleetv1alpha1.LabelDecisionGroupName: name, fleetv1alpha1.LabelDecisionGroupIndex: idx}}}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: c})
		}
		return d
	}
	got := DecisionGroups([]fleetv1alpha1.PlacementDecision{
		decision("", "1", "d", "c"), decision("canary", "0", "a"), decision("", "1", "e"),
	})
	want := "0 canary [a]; 1  [c d e]"
	var parts []string
	for _, g := range got {
		parts = append(parts, fmt.Sprintf("%d %s %v", g.Index, g.Name, g.Clusters))
	}
	if s := strings.Join(parts, "; "); s != want {
		t.Errorf("groups %s, want %s", s, want)
	}
}

// stagedHub is a sim hub whose placement puts each cluster in a decision
// group.
func stagedHub(fw *fleetv1alpha1.FederatedWorkload, groups []stages.Group) *simHub {
	var names []string
	for _, g := range groups {
		names = append(names, g.Clusters...)
	}
	slices.Sort(names)
	h := newSimHub(fw, names)
	h.base.Groups = groups
	return h
}

// stagedRollout brings a workload of kind k on web:1 to rest over the
// decision groups, then starts its rollout to web:2 under the stages st;
// it returns the hub and the new revision.
func stagedRollout(t fatalf, k member.Kind, replicas, mu, ms, partition int32, groups []stages.Group, st *fleetv1alpha1.RolloutStages) (*simHub, string) {
	h := stagedHub(simWorkload(k, "web:1", replicas, mu, ms, nil), groups)
	if err := h.rest(); err != nil {
		t.Fatalf("bringing the fleet to rest: %v", err)
	}
	to := simWorkload(k, "web:2", replicas, mu, ms, nil)
	to.Spec.RolloutStrategy.Partition = partition
	to.Spec.RolloutStrategy.Stages = st
	to.Generation, to.Status = 2, h.fw.Status
	h.fw = to
	tmpl, err := member.ParseTemplate(to.Spec.Template.Raw)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return h, tmpl.Revision
}

// fatalf is what stagedRollout needs of a test: testing.T or rapid.T.
type fatalf interface {
	Fatalf(format string, args ...any)
}

// playRound runs a round and lets every member act, settle and report.
func (h *simHub) playRound(t testing.TB) Output {
	out, err := h.round()
	if err == nil {
		err = h.step(h.rounds, nil, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ProgressivePerGroup with a canary group first and an approval gate after
// each stage: the canary rolls alone, the next group waits at the gate (the
// workload says AwaitingApproval and names the gate) until the approval
// names the revision and the gate, then rolls; status.stages says where each
// stage is.
// canaryThenRest: m0 in the group "canary", m1 and m2 in the next.
var canaryThenRest = []stages.Group{{Name: "canary", Index: 0, Clusters: []string{"m0"}}, {Index: 1, Clusters: []string{"m1", "m2"}}}

func TestPlan_StagesRollGroupByGroupBehindTheirGate(t *testing.T) {
	h, rev := stagedRollout(t, member.Deployment, 6, 1, 1, 0, canaryThenRest,
		&fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup, Gate: &v1alpha1.Gate{Approval: true}})
	var out Output
	for range 40 {
		out = h.playRound(t)
		if out.Status.Gate != nil {
			break
		}
		if u := h.members["m1"].Count(rev).Updated + h.members["m2"].Count(rev).Updated; u > 0 {
			t.Fatalf("group 1 updated %d units before the canary's stage succeeded:%s", u, h.layout(rev))
		}
	}
	st := out.Status
	if st.Gate == nil || st.Gate.Name != "stage-canary-0" || st.Gate.Reason != v1alpha1.ReasonAwaitingApproval {
		t.Fatalf("no gate after the canary: %+v", st.Gate)
	}
	if p := progressing(st); p.Reason != string(v1alpha1.ReasonAwaitingApproval) || !strings.Contains(p.Message, "stage-canary-0") {
		t.Fatalf("progressing %+v", p)
	}
	if st.Stages[0].Phase != fleetv1alpha1.StageAwaitingApproval || st.Stages[1].Phase != fleetv1alpha1.StagePending ||
		h.members["m0"].Count(rev).Updated != 2 {
		t.Fatalf("stages %+v:%s", st.Stages, h.layout(rev))
	}
	// held: rounds go by, nothing moves in group 1
	for range 5 {
		out = h.playRound(t)
	}
	if u := h.members["m1"].Count(rev).Updated; u > 0 || out.Status.Stages[1].Phase != fleetv1alpha1.StagePending {
		t.Fatalf("group 1 moved behind a closed gate:%s", h.layout(rev))
	}
	// an approval of another gate or revision does not open it
	h.fw.Annotations = map[string]string{v1alpha1.AnnotationApprovedRevision: v1alpha1.ApprovalOf("other", "stage-canary-0")}
	if out = h.playRound(t); out.Status.Gate == nil {
		t.Fatal("an approval of another revision opened the gate")
	}
	h.fw.Annotations[v1alpha1.AnnotationApprovedRevision] = v1alpha1.ApprovalOf(rev, "stage-canary-0")
	for range 60 {
		out = h.playRound(t)
		if out.Plan.Done && out.Status.Stages[1].Phase == fleetv1alpha1.StageSucceeded {
			break
		}
	}
	if out.Status.Gate != nil || out.Status.Stages[0].Phase != fleetv1alpha1.StageSucceeded || out.Status.Stages[1].Phase != fleetv1alpha1.StageSucceeded {
		t.Fatalf("after the approval: %+v %+v", out.Status.Stages, out.Status.Gate)
	}
	if p := progressing(out.Status); p.Reason != string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) {
		t.Fatalf("progressing at the end: %+v", p)
	}
}

// A cluster that does not complete within progressDeadline fails; with more
// failures than maxFailures the rollout halts (MaxFailuresExceeded,
// Stalled) and the next stage never starts.
func TestPlan_FailuresPastMaxFailuresHaltTheRollout(t *testing.T) {
	groups := []stages.Group{{Name: "canary", Index: 0, Clusters: []string{"m0"}}, {Index: 1, Clusters: []string{"m1"}}, {Index: 2, Clusters: []string{"m2"}}}
	h, rev := stagedRollout(t, member.Deployment, 6, 3, 0, 0, groups, &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup,
		ProgressDeadline: metav1.Duration{Duration: 20 * time.Second}})
	// m1's new pods never start
	h.members["m1"].Frozen = true
	var out Output
	for range 60 {
		out = h.playRound(t)
		if out.Stages != nil && out.Stages.Halted {
			break
		}
	}
	if out.Stages == nil || !out.Stages.Halted {
		t.Fatalf("not halted: %+v", out.Status.Stages)
	}
	st := out.Status
	if p := progressing(st); p.Reason != string(fleetv1alpha1.FederatedWorkloadReasonMaxFailuresExceeded) || !strings.Contains(p.Message, "m1") {
		t.Fatalf("progressing %+v", p)
	}
	if c := meta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.FederatedWorkloadStalled)); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("not stalled: %+v", st.Conditions)
	}
	if st.Stages[1].Phase != fleetv1alpha1.StageFailed || !slices.Equal(st.Stages[1].FailedClusters, []string{"m1"}) || st.Stages[2].Phase != fleetv1alpha1.StagePending {
		t.Fatalf("stages %+v", st.Stages)
	}
	for range 10 {
		out = h.playRound(t)
	}
	if u := h.members["m2"].Count(rev).Updated; u > 0 {
		t.Fatalf("the stage after the halt started:%s", h.layout(rev))
	}
}

// Over random fleets cut into random stages (groups, Progressive waves, a
// mandatory group first), with soaks and a gate approved at random rounds
// and members that report late, the global budget holds after every
// member's every action, no cluster of a stage that has not started runs a
// unit of the new revision, and the rollout completes once every gate is
// approved.
func TestPlan_BudgetsHoldAcrossStages(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom([]member.Kind{member.Deployment, member.StatefulSet}).Draw(t, "kind")
		n := rapid.IntRange(2, 5).Draw(t, "members")
		nGroups := rapid.IntRange(1, 3).Draw(t, "groups")
		groups := make([]stages.Group, nGroups)
		for i := range groups {
			groups[i] = stages.Group{Index: int32(i)}
			if i == 0 && rapid.Bool().Draw(t, "named canary") {
				groups[i].Name = "canary"
			}
		}
		var names []string
		for i := range n {
			c := fmt.Sprintf("m%d", i)
			names = append(names, c)
			g := rapid.IntRange(0, nGroups-1).Draw(t, "group of "+c)
			groups[g].Clusters = append(groups[g].Clusters, c)
		}
		replicas, mu, ms, partition := drawLimits(t, kind)
		spec := &fleetv1alpha1.RolloutStages{
			Type:           rapid.SampledFrom([]fleetv1alpha1.StageType{fleetv1alpha1.StagesAll, fleetv1alpha1.StagesProgressive, fleetv1alpha1.StagesProgressivePerGroup}).Draw(t, "type"),
			MinSuccessTime: metav1.Duration{Duration: time.Duration(rapid.IntRange(0, 3).Draw(t, "soak polls")) * poll},
		}
		if spec.Type == fleetv1alpha1.StagesProgressive {
			mc := intstr.FromInt32(int32(rapid.IntRange(1, 2).Draw(t, "maxConcurrency")))
			spec.MaxConcurrency = &mc
		}
		if spec.Type != fleetv1alpha1.StagesAll && rapid.Bool().Draw(t, "mandatory") {
			last := int32(nGroups - 1)
			spec.MandatoryDecisionGroups = []fleetv1alpha1.MandatoryDecisionGroup{{GroupIndex: &last}}
		}
		if rapid.Bool().Draw(t, "gated") {
			spec.Gate = &v1alpha1.Gate{Approval: true, SoakSeconds: int32(rapid.IntRange(0, 4).Draw(t, "gate soak"))}
		}

		h, rev := stagedRollout(t, kind, replicas, mu, ms, partition, groups, spec)
		var out Output
		check := func(when string) {
			if breach := h.budgetBreach(rev); breach != "" {
				t.Fatalf("%s: %s", when, breach)
			}
			for _, s := range out.Status.Stages {
				if s.Phase != fleetv1alpha1.StagePending {
					continue
				}
				for _, c := range s.Clusters {
					if u := h.members[c].Count(rev).Updated; u > 0 {
						t.Fatalf("%s: %s of stage %s, not started, runs %d units of the new revision:%s", when, c, s.Name, u, h.layout(rev))
					}
				}
			}
		}
		for r := range maxWipeRounds {
			lagging := map[string]bool{}
			for _, c := range names {
				lagging[c] = rapid.IntRange(0, 3).Draw(t, "reports late") == 0
			}
			if g := h.fw.Status.Gate; g != nil && (r > 100 || rapid.IntRange(0, 3).Draw(t, "approve") == 0) {
				h.fw.Annotations = map[string]string{v1alpha1.AnnotationApprovedRevision: v1alpha1.ApprovalOf(rev, g.Name)}
			}
			var err error
			if out, err = h.round(); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			if out.Plan.Done && out.Stages.Finished() {
				endOf(t, h, rev, out.Plan, replicas, partition, "")
				return
			}
			if err := h.step(r, lagging, check); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("no end after %d rounds: %+v:%s", maxWipeRounds, out.Status.Stages, h.layout(rev))
	})
}

// A new workload's first members replace nothing: its stages do not hold
// them, and it settles without waiting at a gate. Its next template change
// walks the stages.
func TestPlan_ANewWorkloadIsNotHeldByItsStages(t *testing.T) {
	fw := simWorkload(member.Deployment, "web:1", 6, 1, 1, nil)
	fw.Spec.RolloutStrategy.Stages = &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup,
		Gate: &v1alpha1.Gate{Approval: true}}
	h := stagedHub(fw, []stages.Group{{Name: "canary", Index: 0, Clusters: []string{"m0"}}, {Index: 1, Clusters: []string{"m1"}}})
	if err := h.rest(); err != nil {
		t.Fatalf("a new staged workload did not settle: %v: %+v", err, h.fw.Status.Stages)
	}
	if st := h.fw.Status; len(st.Stages) != 0 || st.Gate != nil || progressing(st).Reason != string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) {
		t.Fatalf("settled with stages %+v, gate %+v, progressing %+v", st.Stages, st.Gate, progressing(st))
	}
	to := simWorkload(member.Deployment, "web:2", 6, 1, 1, nil)
	to.Spec.RolloutStrategy.Stages = fw.Spec.RolloutStrategy.Stages
	to.Generation, to.Status = 2, h.fw.Status
	h.fw = to
	if out := h.playRound(t); len(out.Status.Stages) != 2 || out.Status.Stages[1].Phase != fleetv1alpha1.StagePending {
		t.Fatalf("the template change walks no stages: %+v", out.Status.Stages)
	}
}

// A stage gate's required condition holds when every member object of the
// stage reports it (another controller's, written on the member object):
// the next stage waits for it (AwaitingConditions) and starts once the
// canary's object says so.
func TestPlan_AStageGateAwaitsTheConditionOnTheStagesMemberObjects(t *testing.T) {
	h, _ := stagedRollout(t, member.Deployment, 6, 1, 1, 0, canaryThenRest, &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup,
		Gate: &v1alpha1.Gate{RequiredConditions: []v1alpha1.RequiredCondition{{Type: "Verified", Status: metav1.ConditionTrue}}}})
	h.members["m1"].Conditions = map[string]string{"Verified": "True"} // another stage's member says nothing for m0
	var out Output
	for range 40 {
		if out = h.playRound(t); out.Status.Gate != nil {
			break
		}
	}
	if g := out.Status.Gate; g == nil || g.Reason != v1alpha1.ReasonAwaitingConditions || progressing(out.Status).Reason != string(v1alpha1.ReasonAwaitingConditions) {
		t.Fatalf("gate %+v, progressing %+v", g, progressing(out.Status))
	}
	h.members["m0"].Conditions = map[string]string{"Verified": "False"}
	for range 5 {
		out = h.playRound(t)
	}
	if out.Status.Stages[1].Phase != fleetv1alpha1.StagePending {
		t.Fatalf("the next stage started on Verified=False: %+v", out.Status.Stages)
	}
	h.members["m0"].Conditions["Verified"] = "True"
	for range 40 {
		if out = h.playRound(t); out.Plan.Done && out.Stages.Finished() {
			break
		}
	}
	if out.Status.Stages[1].Phase != fleetv1alpha1.StageSucceeded {
		t.Fatalf("after the condition: %+v", out.Status.Stages)
	}
}
