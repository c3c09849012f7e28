package fleet

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// wipeStatus replaces the workload's status with an empty one through the
// status subresource, as a status update by someone else, or a restore that
// brings the workload back without it, leaves it.
func (f *fedFleet) wipeStatus() {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fw := f.workload()
		fw.Status = fleetv1alpha1.FederatedWorkloadStatus{}
		return hubEnv.Client.Status().Update(context.Background(), fw)
	})
	if err != nil {
		f.t.Fatalf("wiping the status: %v", err)
	}
}

// The workload's status wiped while its shares move (10 pods from 5/5 to
// 1/9, maxUnavailable 1, maxSurge 1) changes nothing the hub does: each
// member object carries the hub's last decision for it (annotation
// fleet.lockstep.dev/grant), the next round rebuilds the shares from there,
// and the units keep moving a few at a time, within the budgets: the member
// objects never ask for more than 11 pods nor, played, leave fewer than 9
// available, and neither object is recreated. (With shares taken from the
// status alone, the round after the wipe saw a new workload and sent both
// members to their new shares at once: 1 and 9, leaving 7 available.)
func TestFederatedWorkload_WipedStatusKeepsSharesMovingWithinTheBudgets(t *testing.T) {
	f := newFedFleet(t, "fw-wipe", false)
	a, b := f.clusters[0], f.clusters[1]
	f.relabel(a, "tier", "small")
	f.relabel(b, "tier", "big")
	f.createWorkload(10, intstr.FromInt32(1), intstr.FromInt32(1), nil)
	eventually(t, fwStepTimeout, "both member Deployments at 5", func() (bool, string) {
		da, db := readDep(f.deployment(a)), readDep(f.deployment(b))
		return da.replicas == 5 && db.replicas == 5, da.String() + "; " + db.String()
	})
	f.settle()
	f.ackUntil("the workload settled", complete)
	uids := map[string]string{}
	for _, c := range f.clusters {
		u := f.deployment(c)
		uids[c] = string(u.GetUID())
		if rec, ok := member.RecordOf(u); !ok || rec.Share != 5 {
			t.Fatalf("%s's Deployment carries no record of its share of 5: %v", c, u.GetAnnotations())
		}
	}

	f.update("weights 1:9", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.Division.Weights = []fleetv1alpha1.ClusterWeight{
			{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "small"}}, Weight: 1},
			{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "big"}}, Weight: 9},
		}
	})
	wiped := false
	f.settleUntil("shares 1 and 9", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		da, db := readDep(f.deployment(a)), readDep(f.deployment(b))
		if total := da.replicas + db.replicas; total > 11 {
			t.Fatalf("the members ask for %d pods, more than 11: %s: %v; %s: %v", total, a, da, b, db)
		}
		// What a write the members have not played yet leaves available: a
		// shrink takes pods away at once, a growth adds none yet.
		if avl := min(da.stAvl, da.replicas) + min(db.stAvl, db.replicas); avl < 9 || da.stAvl+db.stAvl < 9 {
			t.Fatalf("the members' writes leave %d pods available, fewer than 9: %s: %v; %s: %v", avl, a, da, b, db)
		}
		if !wiped && db.replicas > 5 && db.replicas < 8 {
			// mid-move: b has grown by a pod or two, a not shrunk to 1
			f.wipeStatus()
			wiped = true
			return false
		}
		return wiped && da.replicas == 1 && db.replicas == 9 && complete(fw) && len(fw.Status.Clusters) == 2
	})
	if !wiped {
		t.Fatal("the shares never moved far enough to wipe the status mid-move")
	}
	for c, uid := range uids {
		if got := string(f.deployment(c).GetUID()); got != uid {
			t.Errorf("%s's Deployment was recreated (%s, was %s)", c, got, uid)
		}
	}
}
