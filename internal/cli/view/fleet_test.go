package view

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// golden compares got with testdata/NAME.golden, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli/view -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("rendering differs from %s (rerun with -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

const deploymentTemplate = `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"selector":{"matchLabels":{"app":"web"}},
"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"web:v2"}]}}}}`

const statefulSetTemplate = `{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"selector":{"matchLabels":{"app":"kv"}},
"template":{"metadata":{"labels":{"app":"kv"}},"spec":{"containers":[{"name":"kv","image":"kv:2.1"}]}}}}`

const podCliqueSetTemplate = `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{"template":{"cliques":[
{"name":"frontend","template":{"spec":{"containers":[{"name":"f","image":"llm-frontend:v2"}]}}},
{"name":"engine","template":{"spec":{"containers":[{"name":"e","image":"llm-engine:v2"}]}}}]}}}`

func federated(name, template string, replicas int32, mu, ms intstr.IntOrString) *fleetv1alpha1.FederatedWorkload {
	fw := &fleetv1alpha1.FederatedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Generation: 3}}
	fw.Spec.PlacementRef.Name = "gpu-clusters"
	fw.Spec.Replicas = replicas
	fw.Spec.Template = runtime.RawExtension{Raw: []byte(template)}
	fw.Spec.RolloutStrategy.MaxUnavailable, fw.Spec.RolloutStrategy.MaxSurge = &mu, &ms
	fw.Status.ObservedGeneration = 3
	fw.Status.UpdateRevision = "9d2tjtk42n"
	return fw
}

// conditions are the hub's five, with Reconciling and Stalled derived from
// Progressing as the hub derives them.
func conditions(available bool, availMsg string, prog metav1.ConditionStatus, reason fleetv1alpha1.FederatedWorkloadReason, msg string, paused bool) []metav1.Condition {
	c := func(t fleetv1alpha1.FederatedWorkloadConditionType, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg}
	}
	out := []metav1.Condition{c(fleetv1alpha1.FederatedWorkloadAvailable, metav1.ConditionTrue, string(fleetv1alpha1.FederatedWorkloadReasonMinimumAvailable), availMsg)}
	if !available {
		out[0].Status, out[0].Reason = metav1.ConditionFalse, string(fleetv1alpha1.FederatedWorkloadReasonBelowMinimumAvailable)
	}
	out = append(out, c(fleetv1alpha1.FederatedWorkloadProgressing, prog, string(reason), msg))
	if paused {
		out = append(out, c(fleetv1alpha1.FederatedWorkloadPaused, metav1.ConditionTrue, string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused), "spec.rolloutStrategy.paused is true: no member starts a new replacement"))
	} else {
		out = append(out, c(fleetv1alpha1.FederatedWorkloadPaused, metav1.ConditionFalse, string(fleetv1alpha1.FederatedWorkloadReasonRolloutNotPaused), "spec.rolloutStrategy.paused is false"))
	}
	reconciling, stalled := metav1.ConditionFalse, metav1.ConditionFalse
	switch reason {
	case fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress:
		reconciling = metav1.ConditionTrue
	case fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict:
		stalled = metav1.ConditionTrue
	}
	return append(out, c(fleetv1alpha1.FederatedWorkloadReconciling, reconciling, string(reason), msg), c(fleetv1alpha1.FederatedWorkloadStalled, stalled, string(reason), msg))
}

type grant = fleetv1alpha1.MemberGrant

func member(name string, desired, replicas, updated, available int32, g grant, waiting string) fleetv1alpha1.FederatedClusterStatus {
	return fleetv1alpha1.FederatedClusterStatus{Name: name, DesiredReplicas: desired, Replicas: replicas, UpdatedReplicas: updated,
		AvailableReplicas: available, Grant: g, Waiting: waiting}
}

func sum(fw *fleetv1alpha1.FederatedWorkload) {
	for _, c := range fw.Status.Clusters {
		fw.Status.Replicas += c.Replicas
		fw.Status.UpdatedReplicas += c.UpdatedReplicas
		fw.Status.AvailableReplicas += c.AvailableReplicas
	}
}

// fleetMidRollout: web (Deployment, 12 pods, maxUnavailable 2, maxSurge 1)
// over three clusters: eu-1 done, eu-2 mid-way with a surge pod and one not
// ready, us-1 not started (a Deployment takes its whole share or none).
func fleetMidRollout() *fleetv1alpha1.FederatedWorkload {
	fw := federated("web", deploymentTemplate, 12, intstr.FromInt32(2), intstr.FromInt32(1))
	fw.Status.Clusters = []fleetv1alpha1.FederatedClusterStatus{
		member("eu-1", 4, 4, 4, 4, grant{Started: true, Paused: true, MaxUnavailable: 1}, ""),
		member("eu-2", 4, 5, 3, 3, grant{Started: true, MaxUnavailable: 1, MaxSurge: 1}, "1 pod not ready"),
		member("us-1", 4, 4, 0, 4, grant{}, "no budget left to start"),
	}
	fw.Status.Clusters[1].StillActing = &grant{Started: true, MaxUnavailable: 2, MaxSurge: 1}
	sum(fw)
	fw.Status.Conditions = conditions(true, "11 of 12 pods available, at least 10 needed",
		metav1.ConditionTrue, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
		"7 of 12 pods updated; waiting for cluster eu-2: 1 pod not ready; cluster us-1: no budget left to start", false)
	return fw
}

// fleetPaused: kv (StatefulSet, 9 pods, partition 3) paused fleet-wide with
// every member frozen at its partition.
func fleetPaused() *fleetv1alpha1.FederatedWorkload {
	fw := federated("kv", statefulSetTemplate, 9, intstr.FromString("25%"), intstr.FromInt32(0))
	fw.Spec.RolloutStrategy.Partition = 3
	fw.Spec.RolloutStrategy.Paused = true
	fw.Status.Clusters = []fleetv1alpha1.FederatedClusterStatus{
		member("ap-1", 3, 3, 2, 3, grant{Started: true, Partition: 1, Paused: true}, ""),
		member("eu-1", 3, 3, 1, 2, grant{Started: true, Partition: 2, Paused: true}, "1 pod not ready"),
		member("us-1", 3, 3, 0, 3, grant{Started: true, Partition: 3, Paused: true}, "no unavailability budget left"),
	}
	sum(fw)
	fw.Status.Conditions = conditions(true, "8 of 9 pods available, at least 7 needed",
		metav1.ConditionFalse, fleetv1alpha1.FederatedWorkloadReasonRolloutPaused,
		"paused: cluster eu-1: 1 pod not ready; cluster us-1: no unavailability budget left", true)
	return fw
}

// fleetTroubled: llm (PodCliqueSet, 8 replicas) with one member stale, one
// lost, one holding a same-named object of another owner, and one healthy;
// the generation not yet observed.
func fleetTroubled() *fleetv1alpha1.FederatedWorkload {
	fw := federated("llm", podCliqueSetTemplate, 8, intstr.FromInt32(2), intstr.FromInt32(0))
	fw.Generation = 4
	conflict := "Conflict: PodCliqueSet demo/llm is not this workload's (no label fleet.lockstep.dev/federatedworkload=demo.llm); delete it, or label it to hand it over"
	fw.Status.Clusters = []fleetv1alpha1.FederatedClusterStatus{
		member("m1", 2, 2, 2, 2, grant{Started: true, Partition: 0}, ""),
		member("m2", 2, 2, 1, 2, grant{Started: true, Partition: 1}, "status stale"),
		member("m3", 2, 2, 0, 2, grant{Started: true, Partition: 2}, "unreachable for longer than memberLostTimeoutSeconds; its whole share counts as unavailable"),
		member("m4", 2, 0, 0, 0, grant{Partition: 2}, conflict),
	}
	sum(fw)
	fw.Status.Conditions = conditions(false, "6 of 8 replicas available, at least 6 needed",
		metav1.ConditionFalse, fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict,
		"member object conflict in cluster m4: an object not managed by this workload holds its name there (delete it, or label it as status.clusters[].waiting says to hand it over); 3 of 8 replicas updated; waiting for cluster m2: status stale; cluster m3: unreachable for longer than memberLostTimeoutSeconds; its whole share counts as unavailable; cluster m4: "+conflict+"; 2 replicas of the new division cannot move yet (each cluster says why)", false)
	fw.Status.Conditions[0].Message = "4 of 8 replicas available, at least 6 needed"
	return fw
}

// fleetStaged: web rolled group by group: the canary's stage done and its
// gate awaiting approval, the other groups held.
func fleetStaged() *fleetv1alpha1.FederatedWorkload {
	fw := federated("web", deploymentTemplate, 9, intstr.FromInt32(2), intstr.FromInt32(1))
	fw.Spec.RolloutStrategy.Stages = &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup, Gate: &v1alpha1.Gate{Approval: true}}
	fw.Status.Clusters = []fleetv1alpha1.FederatedClusterStatus{
		member("canary-1", 3, 3, 3, 3, grant{Started: true, Paused: true, MaxUnavailable: 1}, ""),
		member("eu-1", 3, 3, 0, 3, grant{}, "its stage has not started"),
		member("us-1", 3, 3, 0, 3, grant{}, "its stage has not started"),
	}
	sum(fw)
	fw.Status.Stages = []fleetv1alpha1.StageStatus{
		{Name: "canary-0", Clusters: []string{"canary-1"}, Phase: fleetv1alpha1.StageAwaitingApproval},
		{Name: "group-1", Clusters: []string{"eu-1"}, Phase: fleetv1alpha1.StagePending},
		{Name: "group-2", Clusters: []string{"us-1"}, Phase: fleetv1alpha1.StagePending},
	}
	fw.Status.Gate = &v1alpha1.GateStatus{Name: "stage-canary-0", Reason: v1alpha1.ReasonAwaitingApproval}
	fw.Status.Conditions = conditions(true, "9 of 9 pods available, at least 7 needed",
		metav1.ConditionTrue, fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAwaitingApproval),
		"gate stage-canary-0 awaits approval of revision 9d2tjtk42n (kubectl lockstep approve, or the annotation lockstep.dev/approved-revision=9d2tjtk42n@stage-canary-0)", false)
	return fw
}

func TestRenderFederated_Golden(t *testing.T) {
	cases := []struct {
		name string
		fw   func() *fleetv1alpha1.FederatedWorkload
		opts Options
	}{
		{"fleet-mid-rollout", fleetMidRollout, Options{}},
		{"fleet-mid-rollout-color", fleetMidRollout, Options{Color: true}},
		{"fleet-paused", fleetPaused, Options{}},
		{"fleet-stale-lost-conflict", fleetTroubled, Options{}},
		{"fleet-stages-awaiting-approval", fleetStaged, Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RenderFederated(&b, tc.fw(), tc.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
}

func TestFederatedPhase_FollowsTheVerdict(t *testing.T) {
	held := fleetPaused()
	held.Spec.RolloutStrategy.Paused = false
	held.Status.Conditions = conditions(true, "", metav1.ConditionFalse, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, "3 of 9 pods updated; nothing left to do", false)
	complete := fleetMidRollout()
	complete.Status.Conditions = conditions(true, "", metav1.ConditionFalse, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, "12 of 12 pods updated; nothing left to do", false)
	lagging := complete.DeepCopy()
	lagging.Generation = 4
	none := fleetMidRollout()
	none.Status.Conditions = nil
	for want, fw := range map[string]*fleetv1alpha1.FederatedWorkload{
		"Progressing": fleetMidRollout(), "Paused": fleetPaused(), "Stalled": fleetTroubled(), "Held": held, "Complete": complete, "Pending": none,
	} {
		if got := FederatedPhase(fw); got != want {
			t.Errorf("FederatedPhase(%s) = %s, want %s", fw.Name, got, want)
		}
	}
	if got := FederatedPhase(lagging); got != "Complete" {
		t.Errorf("a complete status of an older generation reads %s, want Complete (the header notes the lag)", got)
	}
}

func TestBudgetInUse_CountsLostAndConflictingSharesAsUnavailable(t *testing.T) {
	f := &fleetRenderer{fw: fleetTroubled()}
	// m3 (lost) and m4 (conflict) count their whole shares; m1 and m2 run
	// what they should, and no member runs above its share.
	if u, s := f.budgetInUse(); u != 4 || s != 0 {
		t.Errorf("budgetInUse = %d unavailable, %d surge; want 4, 0", u, s)
	}
	f = &fleetRenderer{fw: fleetMidRollout()}
	if u, s := f.budgetInUse(); u != 1 || s != 1 {
		t.Errorf("budgetInUse mid-rollout = %d unavailable, %d surge; want 1, 1", u, s)
	}
}

func TestFleetWaits_LeavesOutTheMembersWaits(t *testing.T) {
	members := []fleetv1alpha1.FederatedClusterStatus{
		{Name: "a", Waiting: "unreachable; its whole share counts"},
		{Name: "a1", Waiting: "x; y"},
		{Name: "b", Waiting: "cut sho..."},
	}
	msg := "3 of 8 updated; waiting for cluster a: unreachable; its whole share counts; cluster a1: x; y; " +
		"cluster b: cut short in the status; cluster c: not in the status; 2 pods of the new division cannot move yet; and 3 more"
	got := fleetWaits(msg, members)
	if want := []string{"2 pods of the new division cannot move yet"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("fleetWaits = %q, want %q", got, want)
	}
	if got := fleetWaits("paused: cluster a: 1 pod not ready", members); got != nil {
		t.Errorf("a message without waits gave %q", got)
	}
}

// placementSurging: gpu-clusters, a canary group of two and the rest (three
// clusters) in the middle of a RollingUpdate of its decisions: eu-3 joined the
// rest's slice, which spilled while it surges; us-2 is listed twice; us-1 is
// no longer Ready.
func placementSurging() *PlacementSnapshot {
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "gpu-clusters", Generation: 2}}
	pl.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}
	per := intstr.FromString("100%")
	pl.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = &per
	pl.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = []fleetv1alpha1.DecisionGroup{{GroupName: "canary",
		GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"stage": "canary"}}}}
	pl.Spec.DecisionStrategy.UpdateStrategy.Type = fleetv1alpha1.RollingUpdateDecisionUpdate
	pl.Status = fleetv1alpha1.PlacementStatus{
		ObservedGeneration: 2, NumberOfSelectedClusters: 5, NumberOfDecisionGroups: 2,
		DecisionGroups: []fleetv1alpha1.DecisionGroupStatus{
			{DecisionGroupIndex: 0, DecisionGroupName: "canary", Decisions: []string{"gpu-clusters-decision-1"}, ClusterCount: 2},
			{DecisionGroupIndex: 1, Decisions: []string{"gpu-clusters-decision-2"}, ClusterCount: 3},
		},
		Conditions: []metav1.Condition{
			{Type: string(fleetv1alpha1.PlacementClusterSetsBound), Status: metav1.ConditionTrue, Reason: "ClusterSetsBound", Message: "set default is bound"},
			{Type: string(fleetv1alpha1.PlacementDecisionsSettled), Status: metav1.ConditionFalse, Reason: "Surging", Message: "1 cluster is being added to its new slice"},
			{Type: string(fleetv1alpha1.PlacementReconciling), Status: metav1.ConditionTrue, Reason: "Surging", Message: "1 cluster is being added to its new slice"},
			{Type: string(fleetv1alpha1.PlacementStalled), Status: metav1.ConditionFalse, Reason: "ClusterSetsBound", Message: "set default is bound"},
		},
	}
	slice := func(name, group string, index string, clusters ...string) fleetv1alpha1.PlacementDecision {
		d := fleetv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Labels: map[string]string{
			fleetv1alpha1.LabelPlacement: "gpu-clusters", fleetv1alpha1.LabelDecisionGroupName: group, fleetv1alpha1.LabelDecisionGroupIndex: index,
		}}}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: c})
		}
		return d
	}
	s := &PlacementSnapshot{Placement: pl, ClustersKnown: true, Decisions: []fleetv1alpha1.PlacementDecision{
		// Listed out of order: the tree orders slices by their number.
		slice("gpu-clusters-decision-10", "", "1", "us-2"),
		slice("gpu-clusters-decision-2", "", "1", "eu-3", "us-1", "us-2"),
		slice("gpu-clusters-decision-1", "canary", "0", "eu-1", "eu-2"),
	}}
	for _, name := range []string{"eu-1", "eu-2", "eu-3", "us-1", "us-2"} {
		mc := fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mc.Status.Conditions = []metav1.Condition{{Type: string(fleetv1alpha1.MemberClusterReady), Status: metav1.ConditionTrue, Reason: "Ready"}}
		if name == "us-1" {
			mc.Status.Conditions[0].Status, mc.Status.Conditions[0].Reason = metav1.ConditionFalse, string(fleetv1alpha1.MemberClusterReasonAPIServerNotReady)
		}
		s.Clusters = append(s.Clusters, mc)
	}
	return s
}

// placementSettled: the same placement settled, read by a tenant who may not
// list MemberClusters.
func placementSettled() *PlacementSnapshot {
	s := placementSurging()
	s.Decisions = s.Decisions[1:]
	s.Decisions[0].Status.Decisions = s.Decisions[0].Status.Decisions[:3]
	for i := range s.Placement.Status.Conditions {
		c := &s.Placement.Status.Conditions[i]
		switch fleetv1alpha1.PlacementConditionType(c.Type) {
		case fleetv1alpha1.PlacementDecisionsSettled:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Settled", "every slice holds its final clusters"
		case fleetv1alpha1.PlacementReconciling:
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Settled", "every slice holds its final clusters"
		}
	}
	s.Clusters, s.ClustersKnown = nil, false
	return s
}

func TestRenderPlacement_Golden(t *testing.T) {
	cases := []struct {
		name string
		snap func() *PlacementSnapshot
		opts Options
	}{
		{"placement-two-groups-surging", placementSurging, Options{}},
		{"placement-two-groups-settled", placementSettled, Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RenderPlacement(&b, tc.snap(), tc.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
}
