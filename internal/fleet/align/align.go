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
// Re-division (weights change, a cluster joins or leaves) moves units between
// members within the same budgets: a member's Desired (the replicas its object
// holds) moves toward its Target (its share now). While shares move, the held
// shares together may run above replicas (a grown member's new units count
// against maxSurge) or below it (a shrunk member's against maxUnavailable), so
// both limits are taken against the global replicas, not the sum of the
// shares. Growth goes first (surge-first); a member shrinks once what grew is
// available, or at once when growth is blocked (no surge budget, or the
// partition leaves no room for more updated units).
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

	"github.com/lockstep-dev/lockstep/api/limit"
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

// PartitionedInFlight is how many units a partitioned member replaces at
// once: what it is charged for, and so what its object must let it replace
// (a ReplicaRecreate PodCliqueSet member holds it as its maxUnavailable, and
// no surge, as internal/fleet/member writes).
const PartitionedInFlight = 1

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
	// Settling: the counts may trail what the member's controller already
	// asked for (a Deployment's ReplicaSets scaled, their pods not yet
	// counted). The counts then fold in what was asked for, so they bound the
	// member's use from above, but not from below: its grant is not cut down
	// to them.
	Settling bool
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

// Stored is grant g as a member object of kind k holds it, and so as the hub
// reads it back. A Deployment cannot have both limits at 0: one that is
// started with neither is paused and holds maxUnavailable 1, which it never
// uses while paused. One not started holds the old template, nothing else.
func Stored(k Kind, g Grant) Grant {
	if k != Deployment {
		return g
	}
	if !g.Started {
		return Grant{}
	}
	if g.MaxUnavailable == 0 && g.MaxSurge == 0 {
		g.Paused, g.MaxUnavailable = true, 1
	}
	return g
}

// Widest is a grant that allows whatever a or b allows: charged for it, a
// member that may act on either one is charged enough. A nil grant allows
// nothing beyond the other.
func Widest(a, b *Grant) *Grant {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &Grant{
		Started:        a.Started || b.Started,
		Partition:      min(a.Partition, b.Partition),
		MaxUnavailable: max(a.MaxUnavailable, b.MaxUnavailable),
		MaxSurge:       max(a.MaxSurge, b.MaxSurge),
		Paused:         a.Paused && b.Paused,
	}
}

// StillActing is what the hub keeps after a round that wrote grant g to m:
// the grants m may act on until its controller observes g, nil when g is the
// only one. A current member acts on the grant its object held (Last); one
// that is not may act on that or on any it had not yet been seen to observe
// (Observed). Read back as the member's Observed while it is not current, it
// keeps a shrunk grant from freeing budget before the member has seen it.
func StillActing(m *Member, g Grant) *Grant {
	last := initial(m)
	if m.Last != nil {
		last = spendable(m, *m.Last)
	}
	acting := &last
	if m.Reach != Current {
		acting = Widest(m.Observed, acting)
	}
	if *acting == g {
		return nil
	}
	return acting
}

// Member is one placed cluster's share of the workload.
type Member struct {
	Name string
	Kind Kind
	// Desired is the replicas the member object holds now: what its own
	// controller works toward.
	Desired int32
	// Target is the member's share of the global replicas under the division
	// now (0 for a member leaving the placement). Desired moves toward it.
	Target int32
	Status Status
	Reach  Reach
	// Last is the grant written in the previous round; nil before the first.
	Last *Grant
	// Observed is the grant the member last observed, when it has not yet
	// observed Last (stale, or lost before it did): it may still act on it.
	// Nil means Last.
	Observed *Grant
	// Held: the member's rollout stage has not started. It keeps what it
	// holds and gets no new budget, as in a pause of its own.
	Held bool
}

// Strategy is the global rollout strategy.
type Strategy struct {
	// Replicas is the global number of units.
	Replicas int32
	// MaxUnavailable and MaxSurge resolve against Replicas by the API's rule
	// (limit.ResolveBudget).
	MaxUnavailable, MaxSurge intstr.IntOrString
	// Partition is how many units stay on the old revision fleet-wide.
	Partition int32
	Paused    bool
}

// MemberPlan is one member's grant and what it is charged against the budget.
type MemberPlan struct {
	Name  string
	Grant Grant
	// Replicas is what the member object is to hold: Desired moved toward
	// Target as far as the budgets allow.
	Replicas int32
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
	// Moving is how far the members' held shares (Desired) run above the
	// global replicas (below when negative) while shares move.
	Moving int32
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
	// SharesHeld is how many units of re-divided shares have yet to move.
	// With every member at rest and none moved, the rollout is Done with them
	// held: no path to the new shares keeps every invariant (a grower's new
	// units would come up on the new revision with the partition leaving no
	// room, and the budgets allow no shrinking first). Lowering the
	// partition, or a budget, lets them move.
	SharesHeld int32
}

// Align computes the next grants. Members are served in name order, so rounds
// are deterministic; a member that cannot use budget does not hold it.
func Align(s Strategy, members []Member) (Plan, error) {
	budget, err := limit.ResolveBudget(&s.MaxUnavailable, &s.MaxSurge, s.Replicas)
	if err != nil {
		return Plan{}, err
	}
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })

	p := Plan{MaxUnavailable: budget.MaxUnavailable, MaxSurge: budget.MaxSurge, AllowedUpdated: max(0, s.Replicas-max(s.Partition, 0))}
	plans := make([]MemberPlan, len(ms))
	// First every member keeps (or shrinks to) what it holds, and is charged for
	// the larger of that and its last grant.
	for i := range ms {
		plans[i] = hold(&ms[i], s.Paused)
		plans[i].Replicas = ms[i].Desired
		if writtenOff(&ms[i]) {
			// Neither its units nor their absence are counted: the others'
			// shares, grown into its share, are held below replicas until
			// they are, which charges the floor exactly as its whole share
			// unavailable would.
			plans[i].Unavailable, plans[i].Surge = 0, 0
			continue
		}
		p.Unavailable += plans[i].Unavailable
		p.Surge += plans[i].Surge
		p.Granted += max(allowedOf(&ms[i], plans[i].Grant), updatedAboveShare(&ms[i]))
		p.Moving += ms[i].Desired
	}
	p.Moving -= s.Replicas
	// Then shares move, before any new rollout budget: a member whose share
	// moves this round gets no more of it until the move is seen.
	moved, why := redivide(ms, plans, &p, s.Partition > 0)
	// Then what is left of the budget goes to current members with work left.
	if !s.Paused {
		for i := range ms {
			m := &ms[i]
			if moved[i] {
				plans[i].Waiting = "its share is moving"
				continue
			}
			if m.Held && !runsNothing(m) {
				// one that runs nothing replaces nothing: it starts as
				// without stages (see grow)
				plans[i].Waiting = "its stage has not started"
				continue
			}
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
	for i := range plans {
		// as the member object holds it, so the next round reads back the same
		plans[i].Grant = Stored(ms[i].Kind, plans[i].Grant)
		if m := &ms[i]; m.Last != nil && !plans[i].Grant.Paused && spendable(m, *m.Last) == spendable(m, plans[i].Grant) {
			// It differs from the last only in what the member cannot spend
			// (the surge a member whose pods are all new gave back): a write
			// would change nothing it does, and cost it a sync.
			plans[i].Grant = *m.Last
		}
	}
	p.Members = plans
	p.Done = true
	offTarget, regranted := false, false
	for i := range ms {
		offTarget = offTarget || ms[i].Desired != ms[i].Target
		regranted = regranted || ms[i].Last == nil || *ms[i].Last != plans[i].Grant
	}
	// Shares that could not move may move next round when a grant changed
	// (its old grant is charged one more round): done only at a fixpoint.
	if offTarget && regranted {
		p.Done = false
	}
	for i := range ms {
		if !doneWith(&ms[i], plans[i].Grant) {
			p.Done = false
		}
		if moved[i] {
			p.Done = false
		}
		if plans[i].Waiting == "" {
			plans[i].Waiting = why[i]
		}
		p.SharesHeld += max(0, ms[i].Target-plans[i].Replicas)
	}
	room := p.AllowedUpdated - p.Granted
	if room > 0 && !usable(ms, plans, room) {
		p.WholeShareShortfall = room
		room = 0
	}
	p.Done = p.Done && room <= 0
	return p, nil
}

// Finished reports whether member m, planned as mp in p, runs everything it
// is allowed on the new revision, available, and can be allowed no more in
// this rollout: a partitioned member with no units held back, or with the
// global partition leaving no room; a Deployment started, or whose whole
// share does not fit what the partition leaves. A rollout stage counts its
// clusters complete by it.
func Finished(p Plan, m Member, mp MemberPlan) bool {
	if m.Held || !doneWith(&m, mp.Grant) {
		return false
	}
	room := p.AllowedUpdated - p.Granted
	switch m.Kind {
	case Partitioned:
		return mp.Grant.Partition == 0 || room <= 0
	case Deployment:
		return mp.Grant.Started || m.Desired == 0 || m.Desired > room
	}
	return true
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
	// Charged for what it can still spend of its last grant: a member that
	// is done with it, or with its surge, frees that budget this round, not
	// only once it has seen the grant that takes it back.
	last = spendable(m, last)
	if m.Kind == Partitioned {
		g.Partition = min(g.Partition, m.Desired) // a share that shrank lowers it too
		g.Paused = paused
	}
	recounted := m.Kind == Deployment && g.Started && m.Reach == Current && !m.Status.Settling
	if recounted {
		// Exactly what it uses now: what it already has down or above its share
		// it may keep (it costs nothing new, and a frozen member that lost a pod
		// could never make it again); the rest goes back to the pool. Only
		// from settled counts: from trailing ones, the budget its controller
		// is using right now would go back to the pool as well.
		g.MaxUnavailable = min(unavailableNow(m), m.Desired)
		g.MaxSurge = runningSurge(m)
	}
	if m.Kind == Deployment && g.Started {
		// Only limits just counted may unfreeze it: a frozen grant's limits
		// are not in use (see Stored), and giving them back to a member is
		// budget the round has not charged.
		g.Paused = paused || (g.MaxUnavailable == 0 && g.MaxSurge == 0) || (last.Paused && !recounted)
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

// spendable is the part of grant g a current member with settled counts
// can still spend: a Deployment makes pods above its share only while some of
// its share is not yet on the new template, and takes pods down only while
// it runs old ones. What it cannot spend it is charged for as it uses it now.
// Its counts cannot change that until the hub writes to it again: its new
// ReplicaSet already asks for its whole share (a pod that fails is replaced
// by the ReplicaSet, within no limit), and no old pod comes back.
func spendable(m *Member, g Grant) Grant {
	if m.Kind != Deployment || !g.Started || g.Paused || m.Reach != Current || m.Status.Settling {
		return g
	}
	if newPodsLeft(m) == 0 {
		g.MaxSurge = min(g.MaxSurge, runningSurge(m))
	}
	if m.Status.Replicas <= m.Status.Updated {
		g.MaxUnavailable = min(g.MaxUnavailable, unavailableNow(m))
	}
	return g
}

// newPodsLeft is how many new pods a Deployment member may still make under
// its spec: its share not yet on the new template. Once every pod it runs is
// new it makes none, and surge beyond what it runs is of no use to it.
// Settling counts bound its pods from above only and cannot say so: then each
// pod of its share not yet updated and available may still be replaced.
func newPodsLeft(m *Member) int32 {
	if m.Status.Settling {
		return max(0, m.Desired-m.Status.UpdatedAvailable)
	}
	return max(0, m.Desired-m.Status.Updated)
}

// grow hands the member what it can use of the budget left in p.
func grow(m *Member, mp *MemberPlan, p *Plan) {
	// What the member is already charged for but does not use may be handed
	// back to it: it never left its reservation.
	// Shares held below replicas while they move leave room only for the
	// growers that make them up; shares held above do not widen the floor
	// for a rollout, only for their shrinkers.
	freeU := p.MaxUnavailable + min(0, p.Moving) - p.Unavailable + (mp.Unavailable - chargeUnavailable(m, mp.Grant))
	freeS := p.MaxSurge - max(0, p.Moving) - p.Surge + (mp.Surge - chargeSurge(m, mp.Grant))
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
		k := max(0, min(g.Partition, room, freeU, PartitionedInFlight-inFlight))
		if k == 0 {
			mp.Waiting = waiting(g.Partition > 0 && room > 0 && inFlight == 0, "no unavailability budget left")
			return
		}
		g.Partition -= k
		p.Granted += k
	case Deployment:
		if g.Paused {
			// A frozen grant's limits are no budget of its own (hold counts
			// them afresh only from settled counts, and then freezes it only
			// with none): it starts again from what is free. But for the
			// surge its ReplicaSets already ask for: a paused Deployment
			// sizes them, in proportion, to replicas + maxSurge, so a lower
			// maxSurge would delete pods, available ones too. What it runs
			// above its share it is charged for already.
			g.MaxUnavailable, g.MaxSurge = 0, min(g.MaxSurge, runningSurge(m))
		}
		if !g.Started {
			// A share on its way up is whole only at its target. A member with
			// no share keeps the old template.
			share := max(m.Desired, m.Target)
			if share == 0 {
				return
			}
			empty := runsNothing(m)
			if empty {
				// Paused, it may never make a unit (see grows): started,
				// every unit it makes is new, and its share grows only as far
				// as the partition still allows (redivide). Only what it
				// holds must fit, and it has nothing to replace: starting it
				// costs no budget.
				share = m.Desired
			}
			if share > room {
				mp.Waiting = waiting(share > 0, fmt.Sprintf("its whole share of %d does not fit the %d units the partition still allows", share, room))
				return
			}
			if freeU <= 0 && freeS <= 0 && !empty {
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
		// Surge lets it make new pods above its share: more than it has new
		// pods left to make would only sit idle (a write that costs it a sync
		// and the others the budget).
		g.MaxSurge += min(max(0, freeS), max(0, outdated-g.MaxSurge), newPodsLeft(m))
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

// freeUnavailable is the unavailability budget left. The members' charges
// are taken against their held shares; the floor is replicas − maxUnavailable,
// so shares held above replicas widen what the charges may reach.
func (p *Plan) freeUnavailable() int32 {
	return p.MaxUnavailable + p.Moving - p.Unavailable
}

// freeSurge is the surge budget left: the ceiling is replicas + maxSurge, so
// shares held above replicas use it up.
func (p *Plan) freeSurge() int32 {
	return p.MaxSurge - p.Moving - p.Surge
}

// redivide moves current members' held shares toward their targets, growth
// first: a grower takes free surge (and, when its new units come up on the
// new revision while a partition holds, room under it). A shrinker gives back what the
// growers already hold above replicas, within the unavailability budget; when
// growth is blocked it gives back first, so the growers can follow: for
// growth short of surge budget any shrinker, for growth short of room under
// the partition only a shrinker whose removed units free such room.
func redivide(ms []Member, plans []MemberPlan, p *Plan, partitioned bool) (moved []bool, why []string) {
	moved, why = make([]bool, len(ms)), make([]string, len(ms))
	var shortOfSurge, shortOfRoom int32
	for i := range ms {
		m := &ms[i]
		want := m.Target - m.Desired
		if want <= 0 || !movable(m, plans[i].Grant) || !grows(m, plans[i].Grant) {
			continue
		}
		updates := updatesWhenGrown(m, plans[i].Grant)
		fits := want
		if updates && partitioned {
			// Without a partition every unit may be new: the surge ceiling is
			// the only bound on the units above replicas.
			fits = min(want, max(0, p.AllowedUpdated-p.Granted))
		}
		g := min(fits, max(0, p.freeSurge()))
		shortOfRoom += want - fits
		shortOfSurge += fits - g
		switch {
		case fits < want:
			why[i] = fmt.Sprintf("its share grows by %d, but the partition leaves room for %d more updated units", want, fits)
		case g < want:
			why[i] = fmt.Sprintf("its share grows by %d, with surge budget for %d", want, g)
		}
		if g == 0 {
			continue
		}
		grow := &plans[i]
		grow.Replicas += g
		if m.Kind == Partitioned && !updates {
			grow.Grant.Partition = grow.Replicas // it holds every unit, new ones too
		}
		if updates {
			p.Granted += g
		}
		// New units start unavailable: charged as such, and the floor widens
		// by as much (they sit above replicas).
		grow.Unavailable += g
		p.Unavailable += g
		p.Moving += g
		moved[i] = true
	}
	anyShrinker := max(0, p.Moving) + shortOfSurge
	for i := range ms {
		m := &ms[i]
		want := m.Desired - m.Target
		if want <= 0 || !movable(m, plans[i].Grant) {
			continue
		}
		// Of its units, those it lets update (the ones it removes first) free
		// room under the partition.
		pool := anyShrinker + min(shortOfRoom, allowedOf(m, plans[i].Grant))
		d := min(want, pool, max(0, p.freeUnavailable()))
		if d < want {
			why[i] = fmt.Sprintf("its share shrinks by %d once the others have grown into it", want)
		}
		if d == 0 {
			continue
		}
		fromAny := min(d, anyShrinker)
		anyShrinker -= fromAny
		shortOfRoom -= d - fromAny
		plans[i].Replicas -= d
		if m.Kind == Partitioned {
			plans[i].Grant.Partition = min(plans[i].Grant.Partition, plans[i].Replicas)
		}
		// Its removed units may all have been available: the floor narrows by
		// them. Until they are gone they sit above its new share: surge.
		plans[i].Surge += d
		p.Surge += d
		p.Moving -= d
		moved[i] = true
	}
	return moved, why
}

// writtenOff: a member lost after it left (its share is 0): its units are
// taken as gone, so the others can grow into its share within the budgets.
func writtenOff(m *Member) bool {
	return m.Reach == Lost && m.Target == 0
}

// movable: the member's share may move now. It must be at rest under its
// grant g: current, with nothing above its share or unavailable (its own
// controller scales surge and terminating units in its own way, which the
// charges could not bound), and either frozen by g or done with what g allows
// (else, seeing the write late, it could still update units its new share no
// longer allows).
//
// Both the grant it holds and the one it gets now must keep it so: it may
// still act on the one it holds after the status was read.
func movable(m *Member, g Grant) bool {
	if m.Reach != Current || m.Status.Replicas+m.Status.Terminating > m.Desired || m.Status.Available < m.Status.Replicas {
		return false
	}
	last := initial(m)
	if m.Last != nil {
		last = *m.Last
	}
	return atRestUnder(m, last) && atRestUnder(m, g)
}

// grows: a larger share makes the member more units under grant g. A
// Deployment member not started (paused, on the old template) that runs
// nothing may have no ReplicaSet at all (one created paused has none), and a
// paused Deployment with none creates no pod: its share waits until it is
// started (then its units are new ones), as a partitioned member's with
// nothing yet does.
func grows(m *Member, g Grant) bool {
	return m.Kind != Deployment || g.Started || !runsNothing(m)
}

// runsNothing: no unit of the member exists, terminating or not, and none is
// asked for (a Deployment's status folds in its ReplicaSets' replicas).
func runsNothing(m *Member) bool {
	return m.Status.Replicas+m.Status.Terminating == 0
}

// atRestUnder: the member replaces nothing more under grant g.
func atRestUnder(m *Member, g Grant) bool {
	if m.Kind == Deployment && (!g.Started || g.Paused) {
		return true
	}
	return m.Status.UpdatedAvailable == allowedOf(m, g)
}

// updatedAboveShare is how many updated units a member still runs when its
// share shrank below what it runs: until they are scaled away they count
// against the partition.
func updatedAboveShare(m *Member) int32 {
	if m.Status.Replicas <= m.Desired {
		return 0
	}
	return m.Status.Updated
}

// updatesWhenGrown: the units a member adds when it grows come up on the new
// revision (a started Deployment; a partitioned member that lets some of its
// units update, as its new indices sit above the partition, or one with
// nothing yet, whose object starts on the current template).
func updatesWhenGrown(m *Member, g Grant) bool {
	if m.Kind == Partitioned {
		return g.Partition < m.Desired || m.Desired == 0
	}
	return g.Started
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
