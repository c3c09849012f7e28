// Package align is the fleet's rollout planner: every round it turns one global
// rollout strategy (maxUnavailable, maxSurge, partition, paused over all the
// units of a workload split across member clusters) and what each member last
// reported into the grant each member may use until the next round.
//
// Like internal/rollout it is pure: no client, no clock. A member's grant is
// what its own controller is told (a Deployment's maxUnavailable, maxSurge and
// paused; a StatefulSet's or PodCliqueSet's partition), so the members' own
// controllers do the replacing and the fleet only hands out budget.
//
// A partitioned member updates a unit by taking it down, so a rollout with
// such members needs maxUnavailable of at least 1; with 0 they wait for ever
// (Plan.Members says so).
//
// Safety rests on charging: every member is charged the most its current grant
// lets it have unavailable (or above its share), and budget is handed out only
// from what is left of the global limit. A member that has not yet seen the
// last grant written to it (stale) or that cannot be reached is charged as if
// it used all of that grant, and gets nothing new; a shrunk grant frees budget
// only once the member has seen it (release before acquire).
package align

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kind is how a member object is steered.
type Kind string

const (
	// Deployment members take their whole share or none of it: started means they
	// hold the new template; maxUnavailable/maxSurge bound them, paused freezes them.
	Deployment Kind = "Deployment"
	// Partitioned members (StatefulSet, PodCliqueSet) keep Partition units on the
	// old revision: lowering it lets exactly that many more units update.
	Partitioned Kind = "Partitioned"
)

// partitionedInFlight is how many units a partitioned member replaces at once.
const partitionedInFlight = 1

// Reach is how far the hub can trust a member's status.
type Reach int

const (
	// Current: the member's status describes the last grant written to it.
	Current Reach = iota
	// Stale: the member has not yet observed the last grant (its observed
	// generation is behind), or it is unreachable for now.
	Stale
	// Lost: unreachable for longer than the lost timeout; anything of its share
	// may be down.
	Lost
)

// Status is what a member reports about its units (pods for Deployments and
// StatefulSets, replicas for PodCliqueSets).
type Status struct {
	// Replicas counts the units that exist and are not terminating, surge
	// included; Terminating those on their way out, which still take room.
	Replicas, Terminating int32
	// Updated counts units on the new revision; UpdatedAvailable those of them
	// that are available.
	Updated, UpdatedAvailable int32
	// Available counts available units, old and new.
	Available int32
}

// Grant is what a member is told.
type Grant struct {
	// Started: the member holds the new template. Partitioned members hold it
	// from the first round, with Partition keeping every unit old.
	Started bool
	// Partition is how many of the member's units stay on the old revision
	// (partitioned members). It never rises during a rollout.
	Partition int32
	// MaxUnavailable and MaxSurge bound a started Deployment member.
	MaxUnavailable, MaxSurge int32
	// Paused freezes a started Deployment member (a Deployment cannot have both
	// limits at 0), or a PodCliqueSet member while the rollout is paused.
	Paused bool
}

// Member is one placed cluster's share of the workload.
type Member struct {
	Name string
	Kind Kind
	// Desired is the member's share of the global replicas.
	Desired int32
	Status  Status
	Reach   Reach
	// Last is the grant written in the previous round; nil before the first.
	Last *Grant
	// Observed is the grant the member last observed, when it has not yet
	// observed Last (stale, or lost before it did): it may still act on it.
	// Nil means Last.
	Observed *Grant
}

// Strategy is the global rollout strategy.
type Strategy struct {
	// Replicas is the global number of units.
	Replicas                 int32
	MaxUnavailable, MaxSurge intstr.IntOrString
	// Partition is how many units stay on the old revision fleet-wide.
	Partition int32
	Paused    bool
}

// MemberPlan is one member's grant and what it is charged against the budget.
type MemberPlan struct {
	Name  string
	Grant Grant
	// Unavailable and Surge are what the grant may cost at most.
	Unavailable, Surge int32
	// Waiting says why the member gets no more budget now ("" when it got what
	// it can use).
	Waiting string
}

// Plan is the answer of Align.
type Plan struct {
	Members []MemberPlan
	// MaxUnavailable and MaxSurge are the resolved global limits; Unavailable and
	// Surge what the grants may cost together (never above the limits when the
	// members kept to their last grants).
	MaxUnavailable, MaxSurge, Unavailable, Surge int32
	// AllowedUpdated is how many units may be on the new revision:
	// replicas − partition. Granted is how many the grants allow now.
	AllowedUpdated, Granted int32
	// Done: every member runs all it is allowed on the new revision, available,
	// and no more can be allowed.
	Done bool
	// WholeShareShortfall is how many of AllowedUpdated stay old at the end
	// because no Deployment member's whole share fits them (a Deployment takes
	// its share or none of it).
	WholeShareShortfall int32
}

// Align computes the next grants. Members are served in name order, so rounds
// are deterministic; a member that cannot use budget does not hold it.
func Align(s Strategy, members []Member) (Plan, error) {
	maxSurge, err := intstr.GetScaledValueFromIntOrPercent(&s.MaxSurge, int(s.Replicas), true)
	if err != nil {
		return Plan{}, fmt.Errorf("resolving maxSurge: %w", err)
	}
	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(&s.MaxUnavailable, int(s.Replicas), false)
	if err != nil {
		return Plan{}, fmt.Errorf("resolving maxUnavailable: %w", err)
	}
	if maxSurge < 0 || maxUnavailable < 0 {
		return Plan{}, fmt.Errorf("maxSurge %d and maxUnavailable %d must not be negative", maxSurge, maxUnavailable)
	}
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1 // as a Deployment: a rollout must be able to move
	}
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })

	p := Plan{MaxUnavailable: int32(maxUnavailable), MaxSurge: int32(maxSurge), AllowedUpdated: max(0, s.Replicas-max(s.Partition, 0))}
	plans := make([]MemberPlan, len(ms))
	// First every member keeps (or shrinks to) what it holds, and is charged for
	// the larger of that and its last grant.
	for i := range ms {
		plans[i] = hold(&ms[i], s.Paused)
		p.Unavailable += plans[i].Unavailable
		p.Surge += plans[i].Surge
		p.Granted += allowedOf(&ms[i], plans[i].Grant)
	}
	// Then what is left of the budget goes to current members with work left.
	if !s.Paused {
		for i := range ms {
			m := &ms[i]
			if m.Reach != Current {
				plans[i].Waiting = "status stale"
				if m.Reach == Lost {
					plans[i].Waiting = "unreachable"
				}
				continue
			}
			grow(m, &plans[i], &p)
		}
	}
	p.Members = plans
	p.Done = true
	for i := range ms {
		if !doneWith(&ms[i], plans[i].Grant) {
			p.Done = false
		}
	}
	room := p.AllowedUpdated - p.Granted
	if room > 0 && !usable(ms, plans, room) {
		p.WholeShareShortfall = room
		room = 0
	}
	p.Done = p.Done && room <= 0
	return p, nil
}

// usable reports whether some member could still take part of room: a
// partitioned member with units held, or a Deployment whose whole share fits.
func usable(ms []Member, plans []MemberPlan, room int32) bool {
	for i := range ms {
		g := plans[i].Grant
		switch {
		case ms[i].Kind == Partitioned && g.Partition > 0:
			return true
		case ms[i].Kind == Deployment && !g.Started && ms[i].Desired > 0 && ms[i].Desired <= room:
			return true
		}
	}
	return false
}

// initial is the grant of a member before its first round: nothing may update.
func initial(m *Member) Grant {
	if m.Kind == Partitioned {
		return Grant{Started: true, Partition: m.Desired}
	}
	return Grant{}
}

// hold is the member's grant before any new budget: its last grant, a started
// Deployment's limits set to what it uses now (a current member only), and
// frozen when paused. It is charged the larger of that grant and its last.
func hold(m *Member, paused bool) MemberPlan {
	last := initial(m)
	if m.Last != nil {
		last = *m.Last
	}
	g := last
	if m.Kind == Partitioned {
		g.Partition = min(g.Partition, m.Desired) // a share that shrank lowers it too
		g.Paused = paused
	}
	if m.Kind == Deployment && g.Started && m.Reach == Current {
		// Exactly what it uses now: what it already has down or above its share
		// it may keep (it costs nothing new, and a frozen member that lost a pod
		// could never make it again); the rest goes back to the pool.
		g.MaxUnavailable = min(unavailableNow(m), m.Desired)
		g.MaxSurge = runningSurge(m)
	}
	if m.Kind == Deployment && g.Started {
		g.Paused = paused || (g.MaxUnavailable == 0 && g.MaxSurge == 0)
	}
	mp := MemberPlan{Name: m.Name, Grant: g}
	mp.Unavailable = max(chargeUnavailable(m, last), chargeUnavailable(m, g))
	mp.Surge = max(chargeSurge(m, last), chargeSurge(m, g))
	if m.Observed != nil {
		// not yet seen the last write: it may still act on what it saw before
		mp.Unavailable = max(mp.Unavailable, chargeUnavailable(m, *m.Observed))
		mp.Surge = max(mp.Surge, chargeSurge(m, *m.Observed))
	}
	return mp
}

// grow hands the member what it can use of the budget left in p.
func grow(m *Member, mp *MemberPlan, p *Plan) {
	// What the member is already charged for but does not use may be handed
	// back to it: it never left its reservation.
	freeU := p.MaxUnavailable - p.Unavailable + (mp.Unavailable - chargeUnavailable(m, mp.Grant))
	freeS := p.MaxSurge - p.Surge + (mp.Surge - chargeSurge(m, mp.Grant))
	room := p.AllowedUpdated - p.Granted
	g := mp.Grant
	switch m.Kind {
	case Partitioned:
		// Lowering the partition by k lets k more units update; each may be down
		// until it is updated and available, so k costs k of the budget. Such a
		// member replaces one unit at a time (a StatefulSet, a PodCliqueSet's
		// replicas), so budget beyond one unit in flight would only sit idle.
		inFlight := max(0, m.Desired-g.Partition-m.Status.UpdatedAvailable)
		// room is below 0 when more units run the new revision than allowed
		// (a new workload's members start on their template): never raise.
		k := max(0, min(g.Partition, room, freeU, partitionedInFlight-inFlight))
		if k == 0 {
			mp.Waiting = waiting(g.Partition > 0 && room > 0 && inFlight == 0, "no unavailability budget left")
			return
		}
		g.Partition -= k
		p.Granted += k
	case Deployment:
		if !g.Started {
			if m.Desired > room {
				mp.Waiting = waiting(m.Desired > 0, fmt.Sprintf("its whole share of %d does not fit the %d units the partition still allows", m.Desired, room))
				return
			}
			if freeU <= 0 && freeS <= 0 {
				mp.Waiting = "no budget left to start"
				return
			}
			g.Started = true
			p.Granted += m.Desired
		}
		outdated := max(0, m.Desired-m.Status.UpdatedAvailable)
		if outdated == 0 {
			// Nothing left to replace: let it remove what sits above its share.
			// That costs nothing beyond what it is charged already.
			g.MaxSurge = max(g.MaxSurge, runningSurge(m))
			g.MaxUnavailable = max(g.MaxUnavailable, unavailableNow(m))
			g.Paused = g.MaxUnavailable == 0 && g.MaxSurge == 0
			break
		}
		g.MaxUnavailable += min(max(0, freeU), max(0, outdated-g.MaxUnavailable))
		g.MaxSurge += min(max(0, freeS), max(0, outdated-g.MaxSurge))
		g.Paused = g.MaxUnavailable == 0 && g.MaxSurge == 0
		if g.Paused {
			mp.Waiting = "no budget left"
		}
	}
	mp.Grant = g
	before := mp.Unavailable
	mp.Unavailable = max(mp.Unavailable, chargeUnavailable(m, g))
	p.Unavailable += mp.Unavailable - before
	before = mp.Surge
	mp.Surge = max(mp.Surge, chargeSurge(m, g))
	p.Surge += mp.Surge - before
}

func waiting(blocked bool, why string) string {
	if blocked {
		return why
	}
	return ""
}

// unavailableNow is how many of the member's share are not available.
func unavailableNow(m *Member) int32 {
	return max(0, m.Desired-m.Status.Available)
}

// surgeNow is how many units the member runs above its share, terminating
// ones included.
func surgeNow(m *Member) int32 {
	return max(0, m.Status.Replicas+m.Status.Terminating-m.Desired)
}

// runningSurge is how many pods that are not terminating the member runs
// above its share: what a Deployment counts against its own maxSurge. A grant
// carries this, never surgeNow: a Deployment handed its terminating pods as
// surge would start that many more.
func runningSurge(m *Member) int32 {
	return max(0, m.Status.Replicas-m.Desired)
}

// chargeUnavailable is the most of its share the member may have unavailable
// under grant g.
func chargeUnavailable(m *Member, g Grant) int32 {
	if m.Reach == Lost {
		return m.Desired
	}
	now := unavailableNow(m)
	switch {
	case m.Kind == Partitioned:
		// every unit allowed to update and not yet updated and available
		return max(now, m.Desired-g.Partition-m.Status.UpdatedAvailable)
	case g.Started && !g.Paused:
		return max(now, min(g.MaxUnavailable, m.Desired))
	default:
		return now
	}
}

// chargeSurge is the most the member may run above its share under grant g.
func chargeSurge(m *Member, g Grant) int32 {
	now := surgeNow(m)
	if m.Kind == Deployment && g.Started && !g.Paused {
		return max(now, g.MaxSurge)
	}
	return now
}

// allowedOf is how many of the member's units grant g lets run the new revision.
func allowedOf(m *Member, g Grant) int32 {
	switch {
	case m.Kind == Partitioned:
		return max(0, m.Desired-g.Partition)
	case g.Started:
		return m.Desired
	default:
		return 0
	}
}

// doneWith: the member runs what g allows on the new revision, all available,
// and nothing above its share.
func doneWith(m *Member, g Grant) bool {
	return m.Reach == Current && m.Status.UpdatedAvailable == allowedOf(m, g) && m.Status.Replicas == m.Desired &&
		m.Status.Terminating == 0 && m.Status.Available == m.Desired
}
