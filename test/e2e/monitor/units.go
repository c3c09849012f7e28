package monitor

import (
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/invariant"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// The units of each level, counted over a snapshot for one target: pods of a
// clique, replicas of a scaling group, replicas of the PodCliqueSet. The level
// builders translate a snapshot into the invariant rules' model, with
// availability judged at one moment.

// cliqueLevel is the pods of one PodClique. Its sizes are the replicas it may be
// running to: the spec's, and its object's own when that differs.
func cliqueLevel(t *target, s *snapshot, k cliqueKey, at time.Time) invariant.Level {
	// only standalone cliques carry the PodCliqueSet's replacement policy
	l := invariant.Level{Name: k.String(), Strategy: t.strategy(),
		ReplaceWhileTerminating: k.Group == "" && t.spec.PodReplacementPolicy.ReplacesWhileTerminating()}
	l.SurgeAtReplacedIndex = l.ReplaceWhileTerminating && t.spec.SurgePlacement == v1alpha1.ReplacedIndex
	if c := t.clique(k.Clique); c != nil {
		l.Sizes = sizes(replicaCounts(c.Replicas, s.cliqueObjectReplicas(k)), func(r int32) (rollout.Fenceposts, error) {
			return t.cliqueLimits(k.Clique, r)
		})
	}
	for _, p := range s.podsIn(k) {
		// a doomed pod's deletion is decided: it terminates, as far as
		// counting goes, though the garbage collector has not begun
		l.Units = append(l.Units, invariant.Unit{Index: p.Index, Available: s.podAvailable(p, t.spec.MinReadySeconds, at), Terminating: p.Terminating || p.Doomed,
			Revision: p.TemplateHash, Key: p.Name})
	}
	return l
}

// groupLevel is the replicas of one PodCliqueScalingGroup: a group replica is
// live while any of its pods or PodCliques is, available while every member
// clique has minAvailable available pods.
func groupLevel(t *target, s *snapshot, replica int32, group string, at time.Time) invariant.Level {
	l := invariant.Level{Name: fmt.Sprintf("replica %d group %s", replica, group), Strategy: t.strategy()}
	if g := t.spec.Template.ScalingGroup(group); g != nil {
		l.Sizes = sizes(replicaCounts(g.Replicas, s.groupObjectReplicas(replica, group)), func(r int32) (rollout.Fenceposts, error) {
			return t.groupLimits(group, r)
		})
	}
	live := s.liveGroupReplicas(replica, group)
	for _, j := range sortedKeys(s.groupReplicaIndices(replica, group)) {
		l.Units = append(l.Units, invariant.Unit{Index: j, Available: groupReplicaAvailable(t, s, replica, group, j, at), Terminating: !live[j]})
	}
	return l
}

// setLevel is the replicas of the PodCliqueSet.
func setLevel(t *target, s *snapshot, at time.Time) invariant.Level {
	l := invariant.Level{Name: "the PodCliqueSet", Strategy: t.strategy(), Sizes: sizes([]int32{t.spec.DesiredReplicas()}, t.setLimits)}
	for _, r := range sortedKeys(s.replicaIndices()) {
		l.Units = append(l.Units, invariant.Unit{Index: r, Available: replicaAvailable(t, s, r, at)})
	}
	return l
}

// sizes resolves the limits for each replica count; newTarget has already
// refused specs whose limits do not resolve.
func sizes(counts []int32, limits func(int32) (rollout.Fenceposts, error)) []invariant.Size {
	var out []invariant.Size
	for _, r := range counts {
		if fp, err := limits(r); err == nil {
			out = append(out, invariant.Size{Replicas: r, Fenceposts: fp})
		}
	}
	return out
}

// stepRoles are the roles the steps name, with their updated ready units.
func stepRoles(t *target, s *snapshot, replica int32) []invariant.Role {
	var out []invariant.Role
	for _, st := range t.steps {
		out = append(out, invariant.Role{Name: st.Role, UpdatedReady: updatedReady(t, s, replica, st.Role)})
	}
	return out
}

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
	if g := t.spec.Template.ScalingGroup(role); g != nil {
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
		if !p.Terminating && p.Index < invariant.RoleReplicas(&t.spec, role) && t.updated(p) {
			n++
		}
	}
	return n
}

// updatedReady counts a role's units that are on the target and ready: the
// quantity role steps are gated on.
func updatedReady(t *target, s *snapshot, replica int32, role string) int32 {
	if g := t.spec.Template.ScalingGroup(role); g != nil {
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
		if !p.Terminating && p.Ready && p.Index < invariant.RoleReplicas(&t.spec, role) && t.updated(p) {
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
	return groupReplicaCounts(t, s, replica, group, j, func(p podState) bool { return s.podAvailable(p, t.spec.MinReadySeconds, now) })
}

func groupReplicaCounts(t *target, s *snapshot, replica int32, group string, j int32, counts func(podState) bool) bool {
	g := t.spec.Template.ScalingGroup(group)
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
			if s.podAvailable(p, t.spec.MinReadySeconds, now) {
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
