package monitor

import (
	"time"
)

// The units of each level, counted over a snapshot for one target: pods of a
// clique, replicas of a scaling group, replicas of the PodCliqueSet.

// hasOutdated reports whether a PCS replica has a live pod off the target.
func hasOutdated(t *target, s *snapshot, replica int32) bool {
	for _, p := range s.pods {
		if p.Replica == replica && !p.Terminating && !t.updated(p) {
			return true
		}
	}
	return false
}

// updatedUnits counts a role's units on the target among indices below its
// replicas (surge units are not progress, as in the planner's status): pods of a
// standalone clique, group replicas whose every live pod is on the target.
func updatedUnits(t *target, s *snapshot, replica int32, role string) int32 {
	if g := t.group(role); g != nil {
		n := int32(0)
		for j := range s.groupReplicaIndices(replica, role) {
			if j < g.Replicas && groupReplicaUpdated(t, s, replica, role, j) {
				n++
			}
		}
		return n
	}
	n := int32(0)
	for _, p := range s.podsOfRole(replica, role) {
		if !p.Terminating && p.Index < t.roleReplicas(role) && t.updated(p) {
			n++
		}
	}
	return n
}

// updatedReady counts a role's units that are on the target and ready: the
// quantity role steps are gated on.
func updatedReady(t *target, s *snapshot, replica int32, role string) int32 {
	if g := t.group(role); g != nil {
		n := int32(0)
		for j := range s.groupReplicaIndices(replica, role) {
			if j < g.Replicas && groupReplicaUpdated(t, s, replica, role, j) && groupReplicaReady(t, s, replica, role, j) {
				n++
			}
		}
		return n
	}
	n := int32(0)
	for _, p := range s.podsOfRole(replica, role) {
		if !p.Terminating && p.Ready && p.Index < t.roleReplicas(role) && t.updated(p) {
			n++
		}
	}
	return n
}

// groupReplicaUpdated: the group replica has live pods and all are on the target.
func groupReplicaUpdated(t *target, s *snapshot, replica int32, group string, j int32) bool {
	live := 0
	for _, p := range s.pods {
		if p.Replica != replica || p.Group != group || p.GroupReplica != j || p.Terminating {
			continue
		}
		if !t.updated(p) {
			return false
		}
		live++
	}
	return live > 0
}

// groupReplicaReady: every member clique has at least minAvailable ready pods.
func groupReplicaReady(t *target, s *snapshot, replica int32, group string, j int32) bool {
	return groupReplicaCounts(t, s, replica, group, j, func(p podState) bool { return p.Ready && !p.Finished })
}

// groupReplicaAvailable: every member clique has at least minAvailable available pods.
func groupReplicaAvailable(t *target, s *snapshot, replica int32, group string, j int32, now time.Time) bool {
	return groupReplicaCounts(t, s, replica, group, j, func(p podState) bool { return p.available(t.spec.MinReadySeconds, now) })
}

func groupReplicaCounts(t *target, s *snapshot, replica int32, group string, j int32, counts func(podState) bool) bool {
	g := t.group(group)
	if g == nil {
		return false
	}
	for _, name := range g.CliqueNames {
		c := t.clique(name)
		if c == nil {
			return false
		}
		n := int32(0)
		for _, p := range s.podsIn(cliqueKey{Replica: replica, Group: group, GroupReplica: j, Clique: name}) {
			if !p.Terminating && counts(p) {
				n++
			}
		}
		if n < c.EffectiveMinAvailable() {
			return false
		}
	}
	return true
}

// replicaAvailable: every standalone clique has minAvailable available pods and
// every scaling group minAvailable available group replicas.
func replicaAvailable(t *target, s *snapshot, replica int32, now time.Time) bool {
	for _, c := range t.spec.Template.Cliques {
		if t.spec.Template.ScalingGroupOf(c.Name) != nil {
			continue
		}
		n := int32(0)
		for _, p := range s.podsIn(cliqueKey{Replica: replica, GroupReplica: -1, Clique: c.Name}) {
			if p.available(t.spec.MinReadySeconds, now) {
				n++
			}
		}
		if n < c.EffectiveMinAvailable() {
			return false
		}
	}
	for _, g := range t.spec.Template.PodCliqueScalingGroups {
		if availableGroupReplicas(t, s, replica, g.Name, now) < g.EffectiveMinAvailable() {
			return false
		}
	}
	return true
}

func availableGroupReplicas(t *target, s *snapshot, replica int32, group string, now time.Time) int32 {
	n := int32(0)
	for j := range s.groupReplicaIndices(replica, group) {
		if groupReplicaAvailable(t, s, replica, group, j, now) {
			n++
		}
	}
	return n
}

func availableReplicas(t *target, s *snapshot, now time.Time) int32 {
	n := int32(0)
	for r := range s.replicaIndices() {
		if replicaAvailable(t, s, r, now) {
			n++
		}
	}
	return n
}
