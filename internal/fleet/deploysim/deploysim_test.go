package deploysim

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func rolling(replicas int32, template string, maxUnavailable, maxSurge intstr.IntOrString) Spec {
	return Spec{Replicas: replicas, Template: template, MaxUnavailable: maxUnavailable, MaxSurge: maxSurge}
}

// replicas lists each ReplicaSet's spec.replicas, oldest first.
func replicas(d *Deployment) []int32 {
	var out []int32
	for _, rs := range d.ReplicaSets {
		out = append(out, rs.Replicas)
	}
	return out
}

func wantReplicas(t *testing.T, d *Deployment, want ...int32) {
	t.Helper()
	if got := replicas(d); !slices.Equal(got, want) {
		t.Fatalf("ReplicaSets' replicas %v, want %v: %s", got, want, d)
	}
}

// The real controller's first steps of a rollout of 10 replicas with the
// default 25%/25% (maxSurge 3, maxUnavailable 2): the sync that creates the
// new ReplicaSet gives it 3 and, in the same sync, scales the old one to 8;
// once the ReplicaSet controller deleted 2 old pods, the new one grows to 5
// (13 replicas in all) and nothing more moves until new pods are available.
func TestSync_TenReplicasDefaultLimitsNewToThreeOldToEight(t *testing.T) {
	quarter := intstr.FromString("25%")
	d := AtRest(rolling(10, "v1", quarter, quarter))
	d.SetSpec(rolling(10, "v2", quarter, quarter))
	d.Sync()
	wantReplicas(t, d, 8, 3)
	if d.Revision != 2 || d.ReplicaSets[1].Revision != 2 {
		t.Errorf("revision %d, new ReplicaSet's %d: want 2", d.Revision, d.ReplicaSets[1].Revision)
	}
	d.SyncReplicaSets()
	d.Sync()
	wantReplicas(t, d, 8, 5)
	d.SyncReplicaSets()
	for range 3 {
		d.Sync()
		d.SyncReplicaSets()
	}
	wantReplicas(t, d, 8, 5)
	if p := d.Pods(); p != (Pods{Starting: 5, Available: 8, Terminating: 2}) {
		t.Errorf("pods %+v, want 5 starting, 8 available, 2 terminating", p)
	}
	// The status trails: written from the ReplicaSets' statuses, which the
	// ReplicaSet controller writes from the pods it saw before it acted.
	if d.Status.Replicas != 13 || d.Status.Available != 8 || d.Status.Updated != 5 || d.Status.Terminating != 2 || d.Status.ObservedGeneration != d.Generation {
		t.Errorf("status %+v", d.Status)
	}
	// Time passes: the new pods are available, the old ones gone; the
	// rollout goes on to the end within its limits.
	for range 20 {
		d.StartPods()
		d.RemoveTerminating()
		d.ReportReplicaSets()
		d.Sync()
		d.SyncReplicaSets()
		pods, available, _ := d.Counted("v2")
		if pods > 13 || available < 8 {
			t.Fatalf("%d pods (most 13), %d available (least 8): %s", pods, available, d)
		}
	}
	wantReplicas(t, d, 0, 10)
}

// A Deployment counts terminating pods nowhere: with maxSurge 1 and
// maxUnavailable 0, once its first new pod is available it scales the old
// ReplicaSet down and, before that pod has gone, the new one up, so 6 pods
// run for replicas 4 while its ReplicaSets ask for 5.
func TestSync_TerminatingPodsAreNotCountedAgainstMaxSurge(t *testing.T) {
	d := AtRest(rolling(4, "v1", intstr.FromInt32(0), intstr.FromInt32(1)))
	d.SetSpec(rolling(4, "v2", intstr.FromInt32(0), intstr.FromInt32(1)))
	d.Sync()
	d.SyncReplicaSets()
	wantReplicas(t, d, 4, 1)
	d.StartPods()
	d.ReportReplicaSets()
	d.Sync() // the old one down: 4 available of 4 + 1 may go
	d.SyncReplicaSets()
	d.Sync() // the new one up
	d.SyncReplicaSets()
	wantReplicas(t, d, 3, 2)
	p := d.Pods()
	if p.Active()+p.Terminating != 6 || p.Terminating != 1 {
		t.Errorf("pods %+v: want 5 active and 1 terminating", p)
	}
	if pods, _, _ := d.Counted("v2"); pods != 5 {
		t.Errorf("%d pods counted, want 5 (terminating ones are not)", pods)
	}
}

// Between the Deployment controller scaling a ReplicaSet down and the
// ReplicaSet controller deleting its pods, the Deployment runs more pods than
// its ReplicaSets ask for (so a bound on every pod fails on the Deployment
// controller itself); counted up to each ReplicaSet's replicas they keep to
// maxSurge.
func TestSync_PodsAboveAReplicaSetsReplicasUntilItsControllerRuns(t *testing.T) {
	d := AtRest(rolling(4, "v1", intstr.FromInt32(1), intstr.FromInt32(1)))
	d.SetSpec(rolling(4, "v2", intstr.FromInt32(1), intstr.FromInt32(1)))
	d.Sync()
	wantReplicas(t, d, 3, 1)
	// the new ReplicaSet's controller runs first
	d.ReplicaSets[1].Pods.Starting = 1
	if p := d.Pods(); p.Active() != 5 {
		t.Fatalf("pods %+v", p)
	}
	if pods, available, updated := d.Counted("v2"); pods != 4 || available != 4 || updated != 1 {
		t.Errorf("counted %d pods, %d available, %d updated; want 4, 4, 1", pods, available, updated)
	}
}

// A ReplicaSet reports the pods it saw before it acted, so right after it
// deleted available pods it reports more available than its replicas. The
// real controller then gives up scaling old ReplicaSets down for that sync
// (it takes the difference for a request to scale up).
func TestSync_OldReplicaSetReportingMoreAvailableThanReplicasIsNotScaledDown(t *testing.T) {
	d := AtRest(rolling(4, "v1", intstr.FromInt32(2), intstr.FromInt32(0)))
	d.SetSpec(rolling(4, "v2", intstr.FromInt32(2), intstr.FromInt32(0)))
	d.Sync()
	wantReplicas(t, d, 2, 0)
	d.SyncReplicaSets() // deletes 2 available pods, reports 4 available
	d.Sync()            // the new one to 2
	d.SyncReplicaSets()
	wantReplicas(t, d, 2, 2)
	d.StartPods()
	d.ReplicaSets[1].Status = statusOf(d.ReplicaSets[1], d.ReplicaSets[1].Pods) // only the new one reports
	d.ReplicaSets[0].Status.AvailableReplicas = 4
	d.Sync()
	wantReplicas(t, d, 2, 2)
	d.ReportReplicaSets()
	d.Sync()
	wantReplicas(t, d, 0, 2)
}

// A change of replicas mid-rollout is shared in proportion (the example of
// the Deployment documentation): 10 replicas, maxSurge 3, old ReplicaSet 8
// and new 5, scaled to 15: of the 5 more allowed, 3 go to the old one and 2
// to the new one. Paused, it scales the same way.
func TestSync_ScalingMidRolloutIsProportional(t *testing.T) {
	for _, paused := range []bool{false, true} {
		t.Run(fmt.Sprintf("paused %t", paused), func(t *testing.T) {
			mu, ms := intstr.FromInt32(2), intstr.FromInt32(3)
			d := AtRest(rolling(10, "v1", mu, ms))
			d.SetSpec(rolling(10, "v2", mu, ms))
			for range 4 {
				d.Sync()
				d.SyncReplicaSets()
			}
			wantReplicas(t, d, 8, 5)
			s := rolling(15, "v2", mu, ms)
			s.Paused = paused
			d.SetSpec(s)
			d.Sync()
			wantReplicas(t, d, 11, 7)
			if rs := d.ReplicaSets[0]; rs.DesiredReplicas != 15 || rs.MaxReplicas != 18 {
				t.Errorf("old ReplicaSet scaled for %d/%d, want 15/18", rs.DesiredReplicas, rs.MaxReplicas)
			}
		})
	}
}

// Paused, a Deployment scales but replaces nothing: with a new template and
// no ReplicaSet of it, its old ReplicaSet takes the replicas on the old
// template; created paused, it has no ReplicaSet and makes no pod at all.
func TestSync_PausedScalesOnTheTemplateItRanAndCreatesNothingNew(t *testing.T) {
	mu, ms := intstr.FromInt32(1), intstr.FromInt32(0)
	d := AtRest(rolling(3, "v1", mu, ms))
	s := rolling(5, "v2", mu, ms)
	s.Paused = true
	d.SetSpec(s)
	d.Sync()
	d.SyncReplicaSets()
	wantReplicas(t, d, 5)
	if d.ReplicaSets[0].Template != "v1" {
		t.Errorf("scaled ReplicaSet runs %s", d.ReplicaSets[0].Template)
	}

	fresh := New(s)
	for range 3 {
		fresh.Sync()
		fresh.SyncReplicaSets()
	}
	if len(fresh.ReplicaSets) != 0 || fresh.Status.ObservedGeneration != fresh.Generation {
		t.Errorf("a Deployment created paused: %s", fresh)
	}
	s.Paused = false
	fresh.SetSpec(s)
	fresh.Sync()
	wantReplicas(t, fresh, 5)
}
