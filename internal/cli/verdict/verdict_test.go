package verdict

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func pcsWith(generation, observed int64, status metav1.ConditionStatus, reason v1alpha1.ConditionReason) *v1alpha1.PodCliqueSet {
	pcs := &v1alpha1.PodCliqueSet{}
	pcs.Generation = generation
	pcs.Status.ObservedGeneration = observed
	pcs.Status.UpdateRevision = "app-v2"
	if reason != "" {
		pcs.Status.Conditions = []metav1.Condition{{
			Type: string(v1alpha1.ConditionProgressing), Status: status, Reason: string(reason), Message: "msg",
		}}
	}
	return pcs
}

func TestOf_ExitCodeFollowsTheProgressingCondition(t *testing.T) {
	cases := []struct {
		name     string
		in       Input
		final    bool
		code     int
		contains string
	}{
		{"complete", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete)}, true, Complete, "RolloutComplete"},
		{"rolling", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress)}, false, TimedOut, "RollingUpdateInProgress"},
		{"role step waiting", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonRoleStepWaiting)}, false, TimedOut, "RoleStepWaiting"},
		{"scaling", Input{PCS: pcsWith(1, 1, metav1.ConditionTrue, v1alpha1.ReasonScaling)}, false, TimedOut, "Scaling"},
		{"paused", Input{PCS: pcsWith(3, 3, metav1.ConditionTrue, v1alpha1.ReasonPaused)}, true, Halted, "Paused"},
		{"partition reached", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonPartitionReached)}, true, Halted, "PartitionReached"},
		{"OnDelete waiting", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonWaitingForDeletion)}, true, Halted, "WaitingForDeletion"},
		{"awaiting approval", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval)}, true, Halted, "AwaitingApproval"},
		{"soaking", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonSoaking)}, false, TimedOut, "Soaking"},
		{"deadline exceeded", Input{PCS: pcsWith(2, 2, metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded)}, true, Failed, "ProgressDeadlineExceeded"},
		{"deleted", Input{}, true, Failed, "deleted"},
		{"rollback failed wins over complete", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete), RollbackFailed: "no such revision"}, true, Failed, "no such revision"},
		{"superseded revision", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress), Revision: "app-v1"}, true, Failed, "superseded by app-v2"},
		{"the awaited revision", Input{PCS: pcsWith(2, 2, metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete), Revision: "app-v2"}, true, Complete, "RolloutComplete"},
		{"complete but of an older generation", Input{PCS: pcsWith(3, 2, metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete)}, false, TimedOut, "generation 3"},
		{"no status yet", Input{PCS: pcsWith(1, 1, "", "")}, false, TimedOut, "first status"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Of(tc.in)
			if v.Final != tc.final || v.Code != tc.code || !strings.Contains(v.Line, tc.contains) {
				t.Errorf("Of() = %+v, want final %v, code %d, a line with %q", v, tc.final, tc.code, tc.contains)
			}
		})
	}
}

// fwWith is a FederatedWorkload whose hub wrote Progressing reason (status
// prog) and the kstatus conditions as the hub derives them.
func fwWith(generation, observed int64, prog metav1.ConditionStatus, reason fleetv1alpha1.FederatedWorkloadReason, kstatus bool) *fleetv1alpha1.FederatedWorkload {
	fw := &fleetv1alpha1.FederatedWorkload{}
	fw.Generation = generation
	fw.Spec.Replicas = 10
	fw.Status.ObservedGeneration = observed
	fw.Status.UpdateRevision = "rev-2"
	fw.Status.UpdatedReplicas = 4
	if reason == "" {
		return fw
	}
	fw.Status.Conditions = []metav1.Condition{{Type: string(fleetv1alpha1.FederatedWorkloadProgressing), Status: prog, Reason: string(reason), Message: "msg"}}
	if kstatus {
		reconciling, stalled := metav1.ConditionFalse, metav1.ConditionFalse
		switch reason {
		case fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced:
			reconciling = metav1.ConditionTrue
		case fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict, fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound,
			fleetv1alpha1.FederatedWorkloadReasonInvalidTemplate, fleetv1alpha1.FederatedWorkloadReasonAlignFailed:
			stalled = metav1.ConditionTrue
		}
		fw.Status.Conditions = append(fw.Status.Conditions,
			metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadReconciling), Status: reconciling, Reason: string(reason)},
			metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadStalled), Status: stalled, Reason: string(reason)})
	}
	return fw
}

func TestOfFederated_ExitCodeFollowsTheHubsConditions(t *testing.T) {
	f, tr := metav1.ConditionFalse, metav1.ConditionTrue
	partitioned := func(fw *fleetv1alpha1.FederatedWorkload) *fleetv1alpha1.FederatedWorkload {
		fw.Spec.RolloutStrategy.Partition = 6
		return fw
	}
	allUpdated := func(fw *fleetv1alpha1.FederatedWorkload) *fleetv1alpha1.FederatedWorkload {
		fw.Status.UpdatedReplicas = 10
		return fw
	}
	cases := []struct {
		name     string
		in       FederatedInput
		final    bool
		code     int
		contains string
	}{
		{"complete", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, true)}, true, Complete, "RolloutComplete"},
		{"in progress", FederatedInput{FW: fwWith(2, 2, tr, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, true)}, false, TimedOut, "updated 4/10"},
		{"waiting for clusters", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced, true)}, false, TimedOut, "NoClustersPlaced"},
		{"paused", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutPaused, true)}, true, Halted, "RolloutPaused"},
		{"partition reached", FederatedInput{FW: partitioned(fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, true))}, true, Halted, "partition 6 reached"},
		{"partition with nothing left old", FederatedInput{FW: allUpdated(partitioned(fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, true)))}, true, Complete, "RolloutComplete"},
		{"conflict", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict, true)}, true, Failed, "MemberObjectConflict"},
		{"invalid template", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonInvalidTemplate, true)}, true, Failed, "InvalidTemplate"},
		{"stalled without kstatus conditions", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonAlignFailed, false)}, true, Failed, "AlignFailed"},
		{"complete without kstatus conditions", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, false)}, true, Complete, "RolloutComplete"},
		{"deleted", FederatedInput{}, true, Failed, "deleted"},
		{"older generation", FederatedInput{FW: fwWith(3, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, true)}, false, TimedOut, "generation 3"},
		{"no status yet", FederatedInput{FW: fwWith(1, 1, "", "", false)}, false, TimedOut, "first status"},
		{"superseded revision", FederatedInput{FW: fwWith(2, 2, tr, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, true), Revision: "rev-1"}, true, Failed, "superseded by rev-2"},
		{"the awaited revision", FederatedInput{FW: fwWith(2, 2, f, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, true), Revision: "rev-2"}, true, Complete, "RolloutComplete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := OfFederated(tc.in)
			if v.Final != tc.final || v.Code != tc.code || !strings.Contains(v.Line, tc.contains) {
				t.Errorf("OfFederated() = %+v, want final %v, code %d, a line with %q", v, tc.final, tc.code, tc.contains)
			}
		})
	}
}

func TestOfPlacement_SettledStalledOrSettling(t *testing.T) {
	pl := func(generation, observed int64, conds ...metav1.Condition) *fleetv1alpha1.Placement {
		p := &fleetv1alpha1.Placement{}
		p.Generation, p.Status.ObservedGeneration, p.Status.Conditions = generation, observed, conds
		return p
	}
	settled := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: string(fleetv1alpha1.PlacementDecisionsSettled), Status: s, Reason: reason}
	}
	stalled := metav1.Condition{Type: string(fleetv1alpha1.PlacementStalled), Status: metav1.ConditionTrue, Reason: "ClusterSetUnbound"}
	cases := []struct {
		name  string
		pl    *fleetv1alpha1.Placement
		final bool
		code  int
	}{
		{"settled", pl(1, 1, settled(metav1.ConditionTrue, "Settled")), true, Complete},
		{"surging", pl(1, 1, settled(metav1.ConditionFalse, "Surging")), false, TimedOut},
		{"stalled", pl(1, 1, settled(metav1.ConditionTrue, "Settled"), stalled), true, Failed},
		{"older generation", pl(2, 1, settled(metav1.ConditionTrue, "Settled")), false, TimedOut},
		{"no status", pl(1, 0), false, TimedOut},
		{"deleted", nil, true, Failed},
	}
	for _, tc := range cases {
		if v := OfPlacement(tc.pl); v.Final != tc.final || v.Code != tc.code {
			t.Errorf("%s: OfPlacement() = %+v, want final %v, code %d", tc.name, v, tc.final, tc.code)
		}
	}
}
