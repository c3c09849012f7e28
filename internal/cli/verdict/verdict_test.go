package verdict

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
