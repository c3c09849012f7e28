package rollout

import (
	"fmt"
	"strings"
)

// The boundary rule: a unit of work (a PodCliqueSet replica's update, a role
// step) ends when its pods say so. The next PodCliqueSet replica and the next
// role step start only when the one before has no surge unit left with a live
// pod, and no terminating pod either where the policy waits for termination:
// podReplacementPolicy TerminationComplete for the surge pods of a standalone
// clique, replicaReplacementPolicy PostTermination for surge scaling-group
// replicas. A surge unit's objects may already be terminating while its pods
// still run (the garbage collector has not reached them, or they shut down);
// counting the pods, not the objects, keeps two surge units' worth of
// capacity (two GPU gangs) from being asked for at once.

// podsLeft counts live and terminating pods.
type podsLeft struct{ live, terminating int }

func (n *podsLeft) add(u *Unit) {
	if u.Terminating {
		n.terminating++
	} else {
		n.live++
	}
}

// holds reports whether the pods hold the next replica or step back.
func (n podsLeft) holds(waitForTermination bool) bool {
	return n.live > 0 || (waitForTermination && n.terminating > 0)
}

func (n podsLeft) String() string {
	var parts []string
	if n.live > 0 {
		parts = append(parts, fmt.Sprintf("%d live", n.live))
	}
	if n.terminating > 0 {
		parts = append(parts, fmt.Sprintf("%d terminating", n.terminating))
	}
	return strings.Join(parts, ", ") + " pods"
}

// cliqueSurgeLeft names the surge pods of a standalone clique that hold the
// boundary: live ones, and terminating ones under TerminationComplete.
func cliqueSurgeLeft(role string, pods []Unit, waitForTermination bool) []string {
	var out []string
	for i := range pods {
		u := &pods[i]
		if !u.Surge {
			continue
		}
		var n podsLeft
		n.add(u)
		if n.holds(waitForTermination) {
			out = append(out, fmt.Sprintf("surge pod %d of %s (%s)", u.Index, role, n))
		}
	}
	return out
}

// groupSurgeLeft names the surge replicas of a scaling group (made as surge,
// or at an index at or above replicas) whose pods hold the boundary: any live
// pod, even of a replica whose PodCliques are terminating, and terminating
// pods under PostTermination.
func groupSurgeLeft(role string, replicas int32, reps []GroupReplicaObservation, waitForTermination bool) []string {
	var out []string
	for i := range reps {
		g := &reps[i]
		if !g.Surge && g.Index < replicas {
			continue
		}
		var n podsLeft
		for _, c := range g.Cliques {
			for j := range c.Pods {
				n.add(&c.Pods[j])
			}
		}
		if n.holds(waitForTermination) {
			out = append(out, fmt.Sprintf("surge replica %d of %s (%s)", g.Index, role, n))
		}
	}
	return out
}
