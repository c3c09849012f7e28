package deploysim

import "slices"

// SyncReplicaSets is one sync of the ReplicaSet controller for each
// ReplicaSet: it creates pods (starting) up to its replicas or deletes the
// pods above them (starting ones first; they terminate), and writes its
// status from the pods it listed before it acted, at its generation. It
// reports whether it changed anything.
func (d *Deployment) SyncReplicaSets() bool {
	before := d.snapshot()
	for _, rs := range d.ReplicaSets {
		seen := rs.Pods
		switch diff := rs.Pods.Active() - rs.Replicas; {
		case diff < 0:
			rs.Pods.Starting -= diff
		case diff > 0:
			starting := min(diff, rs.Pods.Starting)
			rs.Pods.Starting -= starting
			rs.Pods.Available -= diff - starting
			rs.Pods.Terminating += diff
		}
		rs.Status = statusOf(rs, seen)
	}
	return !slices.Equal(before, d.snapshot())
}

// ReportReplicaSets is a sync of the ReplicaSet controller for each
// ReplicaSet that only writes its status (it still waits to see the pods it
// created or deleted): the pods as they are now.
func (d *Deployment) ReportReplicaSets() {
	for _, rs := range d.ReplicaSets {
		rs.Status = statusOf(rs, rs.Pods)
	}
}

func statusOf(rs *ReplicaSet, p Pods) ReplicaSetStatus {
	return ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: p.Active(), AvailableReplicas: p.Available, Terminating: p.Terminating}
}
