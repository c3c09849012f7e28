package align

// ReplicaSetCounts is what the hub reads of one ReplicaSet of a Deployment
// member.
type ReplicaSetCounts struct {
	// Spec, Replicas and Available are its spec.replicas, status.replicas and
	// status.availableReplicas.
	Spec, Replicas, Available int32
	// Observed: its status has observed its spec (observedGeneration).
	Observed bool
	// Newest: it is the Deployment's newest ReplicaSet (the revision the
	// Deployment names).
	Newest bool
}

// WithReplicaSets folds into s, a Deployment member's own status (read with
// holdsNew: it holds the rollout's template), what its ReplicaSets ask for.
// A Deployment's counts are its ReplicaSets' status counts, which trail the
// scaling it just did (its observedGeneration is current all the same): each
// ReplicaSet counts the more of the pods it asks for and those it has, and as
// available only those both its spec and status keep, none while its status
// has not observed its spec (a ReplicaSet reports the pods it saw before it
// deleted some, and when it is scaled back up before it reports again,
// neither count shows them gone). The status then bounds what the member uses
// from above, and says Settling while any ReplicaSet has not caught up or the
// folding changed a count. internal/fleet/member reads a real Deployment
// through it, and SimMember a simulated one.
func WithReplicaSets(s Status, holdsNew bool, rss []ReplicaSetCounts) Status {
	var replicas, available, updated, updatedAvailable int32
	for _, rs := range rss {
		asked, kept := max(rs.Spec, rs.Replicas), min(rs.Spec, rs.Available)
		if !rs.Observed {
			kept = 0
		}
		replicas += asked
		available += kept
		if rs.Spec != rs.Replicas || !rs.Observed {
			s.Settling = true
		}
		if holdsNew && rs.Newest {
			updated, updatedAvailable = asked, kept
		}
	}
	if replicas > s.Replicas || available < s.Available || updated > s.Updated || updatedAvailable < s.UpdatedAvailable {
		s.Settling = true
	}
	s.Replicas = max(s.Replicas, replicas)
	s.Available = min(s.Available, available)
	if holdsNew {
		s.Updated = max(s.Updated, updated)
		s.UpdatedAvailable = min(s.UpdatedAvailable, updatedAvailable, s.Updated)
	}
	return s
}
