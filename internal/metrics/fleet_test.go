package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func newFleet(t *testing.T, elected bool, objs ...client.Object) *Fleet {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	return NewFleet(c, func() bool { return elected })
}

// web mid-rollout: eu-1 has its whole share updated, us-1 holds the grant.
func web() *fleetv1alpha1.FederatedWorkload {
	return &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "web"},
		Spec:       fleetv1alpha1.FederatedWorkloadSpec{Replicas: 10},
		Status: fleetv1alpha1.FederatedWorkloadStatus{
			UpdatedReplicas: 5, AvailableReplicas: 9,
			Clusters: []fleetv1alpha1.FederatedClusterStatus{
				{Name: "eu-1", DesiredReplicas: 4, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4, Grant: fleetv1alpha1.MemberGrant{Started: true, Paused: true}},
				{Name: "us-1", DesiredReplicas: 6, Replicas: 7, UpdatedReplicas: 1, AvailableReplicas: 5,
					Grant: fleetv1alpha1.MemberGrant{Started: true, MaxUnavailable: 2, MaxSurge: 1}, Waiting: "1 pod not ready"},
			},
			Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress)}},
		},
	}
}

func TestFleet_ReportsEveryMemberOfAFederatedWorkloadMidRollout(t *testing.T) {
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "eu-1"},
		Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.MemberClusterReasonReachable)}}}}
	f := newFleet(t, true, web(), mc)
	want := `
# HELP lockstep_federatedworkload_member_replicas_updated A member's units on the update revision, as the hub last read them.
# TYPE lockstep_federatedworkload_member_replicas_updated gauge
lockstep_federatedworkload_member_replicas_updated{cluster="eu-1",federatedworkload="web",namespace="serving"} 4
lockstep_federatedworkload_member_replicas_updated{cluster="us-1",federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_member_grant_max_unavailable maxUnavailable granted to a Deployment member.
# TYPE lockstep_federatedworkload_member_grant_max_unavailable gauge
lockstep_federatedworkload_member_grant_max_unavailable{cluster="eu-1",federatedworkload="web",namespace="serving"} 0
lockstep_federatedworkload_member_grant_max_unavailable{cluster="us-1",federatedworkload="web",namespace="serving"} 2
# HELP lockstep_federatedworkload_member_waiting 1 while the rollout waits for this member (its status says why).
# TYPE lockstep_federatedworkload_member_waiting gauge
lockstep_federatedworkload_member_waiting{cluster="eu-1",federatedworkload="web",namespace="serving"} 0
lockstep_federatedworkload_member_waiting{cluster="us-1",federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_replicas_updated Units on the update revision over all members.
# TYPE lockstep_federatedworkload_replicas_updated gauge
lockstep_federatedworkload_replicas_updated{federatedworkload="web",namespace="serving"} 5
# HELP lockstep_federatedworkload_status_condition The FederatedWorkload's status conditions: 1 on the series whose status is the current one.
# TYPE lockstep_federatedworkload_status_condition gauge
lockstep_federatedworkload_status_condition{condition="Progressing",federatedworkload="web",namespace="serving",reason="RolloutInProgress",status="False"} 0
lockstep_federatedworkload_status_condition{condition="Progressing",federatedworkload="web",namespace="serving",reason="RolloutInProgress",status="True"} 1
lockstep_federatedworkload_status_condition{condition="Progressing",federatedworkload="web",namespace="serving",reason="RolloutInProgress",status="Unknown"} 0
# HELP lockstep_membercluster_status_condition A MemberCluster's status conditions: 1 on the series whose status is the current one.
# TYPE lockstep_membercluster_status_condition gauge
lockstep_membercluster_status_condition{cluster="eu-1",condition="Ready",reason="Reachable",status="False"} 0
lockstep_membercluster_status_condition{cluster="eu-1",condition="Ready",reason="Reachable",status="True"} 1
lockstep_membercluster_status_condition{cluster="eu-1",condition="Ready",reason="Reachable",status="Unknown"} 0
`
	if err := testutil.CollectAndCompare(f, strings.NewReader(want),
		"lockstep_federatedworkload_member_replicas_updated", "lockstep_federatedworkload_member_grant_max_unavailable",
		"lockstep_federatedworkload_member_waiting", "lockstep_federatedworkload_replicas_updated",
		"lockstep_federatedworkload_status_condition", "lockstep_membercluster_status_condition"); err != nil {
		t.Fatal(err)
	}
}

// A hub that does not lead reports nothing (but its scrape-error counter).
func TestFleet_OnlyTheLeaderReports(t *testing.T) {
	f := newFleet(t, false, web())
	if n := testutil.CollectAndCount(f); n != 1 {
		t.Fatalf("%d series from a hub that does not lead, want only the error counter", n)
	}
}
