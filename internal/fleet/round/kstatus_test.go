package round

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// kstatus (what helm --wait, Flux and Argo CD compute) follows the round:
// InProgress while members come up, Failed while a member object of another
// owner holds the name, Current once the fleet is settled, InProgress again
// while the status lags a new generation.
func TestKstatus_FollowsTheRounds(t *testing.T) {
	// a new workload: created in a and b, c did not answer
	fresh := Plan(fleetOf(workload(10), []string{"a", "b", "c"}, map[string]Observed{"a": {Read: true}, "b": {Read: true}}))
	assertKstatus(t, "mid-rollout", workload(10), fresh.Status, status.InProgressStatus, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress)

	foreign := &unstructured.Unstructured{}
	foreign.SetAPIVersion("apps/v1")
	foreign.SetKind("Deployment")
	foreign.SetNamespace("shop")
	foreign.SetName("web")
	foreign.SetUID("someone-elses")
	conflict := Plan(fleetOf(workload(4), []string{"a", "b"}, map[string]Observed{"a": {Read: true, Object: foreign}, "b": {Read: true}}))
	assertKstatus(t, "a member object conflict", workload(4), conflict.Status, status.FailedStatus, fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict)

	fw, in := settledFleet(t)
	first := Plan(in)
	in.Workload = fw.DeepCopy()
	in.Workload.Status = first.Status
	done := Plan(in)
	if !done.Plan.Done {
		t.Fatalf("the settled fleet is not done: %+v", done.Plan)
	}
	assertKstatus(t, "settled", fw, done.Status, status.CurrentStatus, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete)

	// the spec changed; no round has seen it yet
	next := fw.DeepCopy()
	next.Generation = 2
	assertKstatus(t, "a new generation not observed", next, done.Status, status.InProgressStatus, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete)

	paused := workload(10)
	paused.Spec.RolloutStrategy.Paused = true
	held := Plan(fleetOf(paused, []string{"a", "b", "c"}, map[string]Observed{"a": {Read: true}, "b": {Read: true}}))
	assertKstatus(t, "paused", paused, held.Status, status.CurrentStatus, fleetv1alpha1.FederatedWorkloadReasonRolloutPaused)
}

// A round that cannot be planned is Failed, but for a placement that has no
// cluster yet: the workload waits for it.
func TestKstatus_AStuckRoundIsFailedButAnEmptyPlacementWaits(t *testing.T) {
	bad := workload(4)
	bad.Spec.Template.Raw = []byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{}}`)
	badDivision := workload(4)
	badDivision.Spec.Division.Weights = []fleetv1alpha1.ClusterWeight{{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}, Weight: 1}}
	noPlacement := fleetOf(workload(4), []string{"a"}, nil)
	noPlacement.Placement = nil
	cases := []struct {
		name string
		in   Input
		want status.Status
	}{
		{"a template of an unsupported kind", fleetOf(bad, []string{"a"}, nil), status.FailedStatus},
		{"no Placement", noPlacement, status.FailedStatus},
		{"weights that do not parse", fleetOf(badDivision, []string{"a"}, map[string]Observed{"a": {Read: true}}), status.FailedStatus},
		{"an empty placement", fleetOf(workload(4), nil, nil), status.InProgressStatus},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Plan(c.in)
			assertKstatus(t, c.name, c.in.Workload, out.Status, c.want, out.Stuck)
		})
	}
	// a workload that was rolling out, then lost its placement: no longer
	// reconciling, stalled
	fw, in := settledFleet(t)
	fw.Status = Plan(fleetOf(workload(10), []string{"a", "b"}, map[string]Observed{"a": {Read: true}})).Status
	in.Workload, in.Placement = fw, nil
	out := Plan(in)
	assertKstatus(t, "placement deleted mid-rollout", fw, out.Status, status.FailedStatus, fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound)
}

// settledFleet is a workload of 4 in a and b, each member at rest with its
// share and its Deployment's own ReplicaSet, and the input of its round.
func settledFleet(t *testing.T) (*fleetv1alpha1.FederatedWorkload, Input) {
	t.Helper()
	fw := withSettledStatus(workload(4), map[string]int32{"a": 2, "b": 2})
	rest := fleetv1alpha1.MemberGrant{Started: true, Paused: true, MaxUnavailable: 1}
	in := fleetOf(fw, []string{"a", "b"}, map[string]Observed{
		"a": {Read: true, Object: settled(t, fw, "a", 2, "uid-a", rest), ReplicaSetsRead: true},
		"b": {Read: true, Object: settled(t, fw, "b", 2, "uid-b", rest), ReplicaSetsRead: true},
	})
	for _, c := range []string{"a", "b"} {
		obs := in.Members[c]
		obs.Object.SetAnnotations(map[string]string{fleetv1alpha1.AnnotationTemplateRevision: obs.Object.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision],
			"deployment.kubernetes.io/revision": "1"})
		rs := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(2)},
			"status": map[string]any{"replicas": int64(2), "availableReplicas": int64(2)}}}
		rs.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "1"})
		rs.SetOwnerReferences([]metav1.OwnerReference{{UID: obs.Object.GetUID()}})
		obs.ReplicaSets = []unstructured.Unstructured{rs}
		in.Members[c] = obs
	}
	return fw, in
}

// assertKstatus computes kstatus on fw with st as its status, and checks that
// Reconciling and Stalled carry Progressing's reason.
func assertKstatus(t *testing.T, what string, fw *fleetv1alpha1.FederatedWorkload, st fleetv1alpha1.FederatedWorkloadStatus, want status.Status, reason fleetv1alpha1.FederatedWorkloadReason) {
	t.Helper()
	fw = fw.DeepCopy()
	fw.Status = st
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fw)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(fleetv1alpha1.GroupVersion.String())
	u.SetKind("FederatedWorkload")
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != want {
		t.Errorf("%s: kstatus %s (%s), want %s; conditions %+v", what, res.Status, res.Message, want, st.Conditions)
	}
	for _, typ := range []fleetv1alpha1.FederatedWorkloadConditionType{fleetv1alpha1.FederatedWorkloadReconciling, fleetv1alpha1.FederatedWorkloadStalled} {
		c := meta.FindStatusCondition(st.Conditions, string(typ))
		if c == nil || c.Reason != string(reason) || c.ObservedGeneration != st.ObservedGeneration {
			t.Errorf("%s: %s %+v, want it with reason %s", what, typ, c, reason)
		}
	}
	if meta.IsStatusConditionTrue(st.Conditions, string(fleetv1alpha1.FederatedWorkloadReconciling)) &&
		meta.IsStatusConditionTrue(st.Conditions, string(fleetv1alpha1.FederatedWorkloadStalled)) {
		t.Errorf("%s: both Reconciling and Stalled True", what)
	}
}
