package rollout

import "github.com/lockstep-dev/lockstep/api/v1alpha1"

// Children's written statuses.
//
// Every level computes its status from the pods it sees, but each child level
// also writes a status of its own, and some of those writes wait a moment
// (write.StatusBatch). Anyone who reads the children (kubectl lockstep get,
// Argo CD's health of a PodCliqueScalingGroup, kstatus, a dashboard) right
// after the parent said it is done would then see a child still on its way.
//
// The rule, at every level that has child objects: a parent says a unit is
// ready, available, updated or done only when the unit's own written status
// says so too. A PodCliqueSet replica counts as ready, available or updated
// (and the PodCliqueSet reads RolloutComplete) only once its PodCliques' and
// scaling groups' statuses agree; a scaling group's replica counts as ready,
// available or updated (and the group reads UpdateComplete) only once its
// member PodCliques' statuses agree.
//
// Why this rule and not "children write such changes at once": a parent reads
// its children's statuses from its cache, which only ever shows what was
// already written, so when the parent's status is written its children's
// agreeing statuses already are, for every reader and whatever its timing.
// Writing at once would only shorten the window: the parent's and the child's
// controllers react to the same pod event, and either may write first. (The
// children do write at once what a parent waits for, see ChildProgressOnly,
// so that the parent's completion is not held back by their batching.)
//
// The rule only lowers what a status says; what the planner decides (which
// units to replace next, the budgets, role steps) still comes from the pods,
// so a rollout does not wait for any status write.

// Report is what a child object's own written status says, as its parent
// reads it. A nil *Report means the caller has no written status to wait for
// (the simulator, whose children have no status of their own).
type Report struct {
	// Revision is the template revision the status counts against
	// (status.updateRevision); Template is the hash of the child's spec
	// template now. A status of an older template says nothing yet.
	Revision, Template string
	// Replicas is the child's spec.replicas.
	Replicas int32
	// Updated, Ready and Available are status.updatedReplicas,
	// status.readyReplicas and status.availableReplicas.
	Updated, Ready, Available int32
}

// ReportOf is the Report of a child whose status is st, whose spec template
// hashes to template and whose spec asks for replicas units.
func ReportOf(st *v1alpha1.ChildStatus, template string, replicas int32) *Report {
	return &Report{Revision: st.UpdateRevision, Template: template, Replicas: replicas,
		Updated: st.UpdatedReplicas, Ready: st.ReadyReplicas, Available: st.AvailableReplicas}
}

// readyAtLeast and availableAtLeast: the status says at least n units are
// ready, or available. A count of an older template still counts: readiness
// does not change with the spec, and a parent must not read a replica
// unavailable for as long as a child takes to look at a new spec.
func (r *Report) readyAtLeast(n int32) bool {
	return r == nil || r.Ready >= n
}

func (r *Report) availableAtLeast(n int32) bool {
	return r == nil || r.Available >= n
}

// settled: the status says every unit the spec asks for is available.
func (r *Report) settled() bool {
	return r == nil || r.Available >= r.Replicas
}

// updated: the status is of the spec's template and says every unit the spec
// asks for is at it.
func (r *Report) updated() bool {
	return r == nil || (r.Revision == r.Template && r.Updated >= r.Replicas)
}

// ConfirmedByMembers lowers ls, a scaling group's status as PlanLevel computed
// it from the pods (p and members are what it planned with), to what the
// member PodCliques' own statuses say: a group replica counts as ready or
// available only when each member's status says it has its minimum so, and
// as updated only when each member's status says all its pods are at its
// template. Complete and the ready, available and updated counts follow.
func ConfirmedByMembers(p Policy, members []MemberMinimum, replicas []GroupReplicaObservation, ls LevelStatus) LevelStatus {
	units := GroupUnits(members, replicas)
	lowered := false
	for i := range units {
		u, g := &units[i], &replicas[i]
		ready, available, updated := true, true, true
		for _, m := range members {
			c := findClique(g.Cliques, m.Clique)
			if c == nil {
				ready, available, updated = false, false, false
				break
			}
			need := m.MinAvailable
			if c.MinAvailable > 0 {
				need = c.MinAvailable
			}
			ready = ready && c.Report.readyAtLeast(need)
			available = available && c.Report.availableAtLeast(need)
			updated = updated && c.Report.updated()
		}
		if u.Ready && !ready {
			u.Ready, lowered = false, true
		}
		if u.Available && !available {
			u.Available, lowered = false, true
		}
		if u.Revision == p.UpdateRevision && !updated {
			// counted as not yet on the update revision
			u.Revision, lowered = "", true
		}
	}
	if !lowered {
		return ls
	}
	v := observeLevel(p, Fenceposts{MaxUnavailable: 1}, units, false)
	c := v.status(nil)
	ls.ReadyReplicas, ls.AvailableReplicas = c.ReadyReplicas, c.AvailableReplicas
	ls.UpdatedReplicas, ls.UpdatedReadyReplicas = c.UpdatedReplicas, c.UpdatedReadyReplicas
	ls.Complete = ls.Complete && c.Complete
	return ls
}
