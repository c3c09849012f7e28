// Package simulate runs Lockstep's planner against a model cluster in simulated
// time. It is the engine behind `lockstep plan` and the sequence and property tests
// of internal/rollout.
//
// The simulation is a discrete-event loop. At every simulated instant it plans the
// whole tree with rollout.PlanTree, checks the plan against the rollout invariants,
// applies it to the model (created pods become ready after a start-up delay with
// seeded jitter; deleted ones disappear after a grace period), and plans again
// until nothing moves; then it jumps to the next event. Everything is
// deterministic for a given Scenario, including the seed.
package simulate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Epoch is the wall-clock time of simulated time zero.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Scenario describes one simulated rollout.
type Scenario struct {
	// From runs steadily at FromRevision before time zero: every index exists and is ready.
	From         *v1alpha1.PodCliqueSetSpec
	FromRevision rollout.SetRevision
	// To, with revision ToRevision, is applied at time zero. Specs must be defaulted.
	To         *v1alpha1.PodCliqueSetSpec
	ToRevision rollout.SetRevision
	// Startup is how long a created pod takes to become ready.
	Startup time.Duration
	// Jitter varies each start-up uniformly within ±Jitter×Startup (0 ≤ Jitter ≤ 1).
	Jitter float64
	// Seed drives the jitter.
	Seed uint64
	// Grace is how long a deleted unit takes to disappear (0: before the next plan).
	Grace time.Duration
	// Faults make chosen replacements never become ready.
	Faults []Fault
	// Changes are spec changes applied later, in time order.
	Changes []Change
	// Deletions delete pods by hand, as a user or an eviction would.
	Deletions []Deletion
	// Approvals approve gates, as `kubectl lockstep approve` would.
	Approvals []Approval
	// Analyses are scripted results of gates' analyses, in place of the
	// measurements the operator would take. A failed one applies the gate's
	// onFailure (a rollback rolls the spec back to From, as the rollback-to
	// annotation restores the revision the rollout came from).
	Analyses []gate.Scripted
	// MaxSteps bounds the number of plans (default 20000); MaxTime bounds
	// simulated time (default 48h). Hitting either ends the run as Stuck.
	MaxSteps int
	MaxTime  time.Duration
	// OnPlan, when set, sees every plan and the input it was made from (tests
	// compare it with what the operator would write).
	OnPlan func(in rollout.SetInput, tree rollout.TreePlan)
}

// Fault makes the After-th unit created for Role never become ready (1-based,
// counted from time zero). Role is a clique name (its pods) or a scaling-group
// name (every pod of the group replica).
type Fault struct {
	Role  string
	After int
}

// Change applies a new spec and/or a new update revision at a simulated time.
type Change struct {
	At time.Duration
	// Spec replaces the spec when not nil.
	Spec *v1alpha1.PodCliqueSetSpec
	// Revision becomes the update revision when not nil.
	Revision *rollout.SetRevision
}

// Deletion deletes, at time At in PCS replica Replica, the live pod Index of
// clique Role, or the live group replica Index when Role names a scaling group.
// For a clique inside a scaling group, Group and GroupReplica locate it (Group
// empty otherwise).
type Deletion struct {
	At           time.Duration
	Replica      int32
	Group        string
	GroupReplica int32
	Role         string
	Index        int32
}

// Approval approves, at time At, the checkpoint Gate (see
// v1alpha1.GateStatus) of the rollout to the update revision of that moment.
// It replaces the approval before it, as the annotation does.
type Approval struct {
	At   time.Duration
	Gate string
}

// Level names the level of an action.
type Level string

// Levels of actions.
const (
	LevelPodCliqueSet          Level = "podcliqueset"
	LevelPodCliqueScalingGroup Level = "podcliquescalinggroup"
	LevelPodClique             Level = "podclique"
)

// Op is what an action does.
type Op string

// Ops of actions.
const (
	OpCreate Op = "create"
	OpDelete Op = "delete"
)

// Action is one create or delete the planner issued.
type Action struct {
	At    time.Duration `json:"at"`
	Level Level         `json:"level"`
	// Replica is the PCS replica index.
	Replica int32 `json:"replica"`
	// Role is the clique or scaling-group name ("" at the PodCliqueSet level).
	Role string `json:"role,omitempty"`
	// Group and GroupReplica locate a pod of a clique inside a scaling group.
	Group        string `json:"group,omitempty"`
	GroupReplica int32  `json:"groupReplica"`
	// Index is the unit's index at its level.
	Index int32 `json:"index"`
	Op    Op    `json:"op"`
	// From is the revision of the deleted unit; To the revision of the created one.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Surge marks a surge unit: above replicas, or beside the outdated unit
	// it replaces (surgePlacement ReplacedIndex).
	Surge  bool                 `json:"surge,omitempty"`
	Reason rollout.DeleteReason `json:"reason,omitempty"`
	// ByHand marks a deletion from Scenario.Deletions rather than the planner.
	ByHand bool `json:"byHand,omitempty"`
}

// String renders an action on one line, for timelines and test failures.
func (a Action) String() string {
	where := fmt.Sprintf("replica %d", a.Replica)
	switch {
	case a.Level == LevelPodCliqueSet:
	case a.Group != "" && a.Level == LevelPodClique:
		where += fmt.Sprintf(" %s-%d %s pod %d", a.Group, a.GroupReplica, a.Role, a.Index)
	case a.Level == LevelPodCliqueScalingGroup:
		where += fmt.Sprintf(" %s replica %d", a.Role, a.Index)
	default:
		where += fmt.Sprintf(" %s pod %d", a.Role, a.Index)
	}
	if a.Level == LevelPodCliqueSet {
		where = fmt.Sprintf("replica %d", a.Index)
	}
	s := fmt.Sprintf("%s %s", a.Op, where)
	if a.Op == OpCreate {
		s += " @" + a.To
	} else {
		s += " @" + a.From
	}
	if a.Surge {
		s += " surge"
	}
	if a.Reason != "" {
		s += " (" + string(a.Reason) + ")"
	}
	if a.ByHand {
		s += " (by hand)"
	}
	return s
}

// OutcomeKind is how a simulation ended.
type OutcomeKind string

// Outcomes.
const (
	Complete  OutcomeKind = "Complete"
	Stuck     OutcomeKind = "Stuck"
	Violation OutcomeKind = "Violation"
)

// Outcome is how a simulation ended and why.
type Outcome struct {
	Kind OutcomeKind `json:"kind"`
	// Reason says why a run is Stuck, or which invariant a Violation broke.
	Reason string `json:"reason,omitempty"`
	// FaultsFired counts faults that took effect; a Stuck run with faults fired
	// is explained by them.
	FaultsFired int `json:"faultsFired"`
	// RolledBack: a gate's failed analysis rolled the rollout back (its
	// onFailure is Rollback); a Complete run then ends on the revision it
	// came from.
	RolledBack bool `json:"rolledBack,omitempty"`
}

// RoleFigure is one number for one role.
type RoleFigure struct {
	Role  string `json:"role"`
	Value int32  `json:"value"`
}

// ReplicaFigure is one number for one PCS replica.
type ReplicaFigure struct {
	Replica int32 `json:"replica"`
	Value   int   `json:"value"`
}

// Summary holds the figures of a run.
type Summary struct {
	// Duration is the simulated time of the last action.
	Duration time.Duration `json:"duration"`
	Steps    int           `json:"steps"`
	// PeakPods is the most pods existing at once, terminating ones included.
	PeakPods int `json:"peakPods"`
	// MinAvailable is, per role, the fewest available units (pods of a standalone
	// clique, replicas of a scaling group) over all PCS replicas at any instant.
	MinAvailable []RoleFigure `json:"minAvailable"`
	// MixedRevisionMoments counts, per PCS replica, the instants at which its live
	// pods came from more than one PodCliqueSet revision.
	MixedRevisionMoments []ReplicaFigure `json:"mixedRevisionMoments"`
}

// Sample is the state of every role at one simulated instant.
type Sample struct {
	At    time.Duration `json:"at"`
	Roles []RoleSample  `json:"roles"`
}

// RoleSample counts the units of one role over all PCS replicas.
type RoleSample struct {
	Role      string `json:"role"`
	Available int32  `json:"available"`
	Updated   int32  `json:"updated"`
}

// Result is what Run returns.
type Result struct {
	Outcome  Outcome  `json:"outcome"`
	Timeline []Action `json:"timeline"`
	Samples  []Sample `json:"samples"`
	Summary  Summary  `json:"summary"`
}

// Run simulates a scenario to its end: Complete, Stuck or Violation.
func Run(sc Scenario) Result {
	s := newSim(sc)
	s.run()
	return s.result()
}

type sim struct {
	sc      Scenario
	spec    *v1alpha1.PodCliqueSetSpec
	revs    rollout.Revisions
	prog    rollout.Progress
	model   *cluster
	rng     *rand.Rand
	now     time.Duration
	steps   int
	created map[string]int // units created per role, for faults
	pods    int            // pods created, for their names
	fired   int
	changes []Change
	dels    []Deletion
	approvs []Approval
	// analyses are the scripted results not yet measured; rolledBack: a
	// failed analysis rolled the rollout back.
	analyses   []gate.Scripted
	rolledBack bool
	// approved is the approval annotation; gateRecheck when the last plan's
	// gate may open by itself (0: never)
	approved    string
	gateRecheck time.Duration

	timeline []Action
	samples  []Sample
	peak     int
	minAvl   []RoleFigure
	mixed    map[int32]int
	outcome  Outcome
	check    *checker
}

func newSim(sc Scenario) *sim {
	if sc.MaxSteps == 0 {
		sc.MaxSteps = 20000
	}
	if sc.MaxTime == 0 {
		sc.MaxTime = 48 * time.Hour
	}
	s := &sim{sc: sc, spec: sc.To, rng: rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x9e3779b97f4a7c15)),
		created: map[string]int{}, mixed: map[int32]int{}}
	s.revs = rollout.Revisions{Current: sc.FromRevision, Update: sc.ToRevision}
	if sc.FromRevision.Name == sc.ToRevision.Name {
		s.revs.Current = sc.ToRevision
	}
	s.model = initialCluster(sc.From, sc.FromRevision, Epoch)
	s.prog = rollout.Progress{UpdateRevision: sc.FromRevision.Name}
	s.changes = slices.Clone(sc.Changes)
	slices.SortStableFunc(s.changes, func(a, b Change) int { return int(a.At - b.At) })
	s.dels = slices.Clone(sc.Deletions)
	slices.SortStableFunc(s.dels, func(a, b Deletion) int { return int(a.At - b.At) })
	s.approvs = slices.Clone(sc.Approvals)
	slices.SortStableFunc(s.approvs, func(a, b Approval) int { return int(a.At - b.At) })
	s.analyses = slices.Clone(sc.Analyses)
	slices.SortStableFunc(s.analyses, func(a, b gate.Scripted) int { return int(a.At - b.At) })
	s.check = newChecker()
	return s
}

func (s *sim) clock() time.Time { return Epoch.Add(s.now) }

func (s *sim) run() {
	for {
		s.applyDue()
		s.model.sweep(s.clock())
		if s.steps >= s.sc.MaxSteps {
			s.outcome = Outcome{Kind: Stuck, Reason: fmt.Sprintf("step limit %d reached", s.sc.MaxSteps)}
			return
		}
		s.steps++
		in := s.input()
		tree, err := rollout.PlanTree(in)
		if err != nil {
			s.outcome = Outcome{Kind: Violation, Reason: "planner error: " + err.Error()}
			return
		}
		if s.sc.OnPlan != nil {
			s.sc.OnPlan(in, tree)
		}
		if v := s.check.plan(s, in, tree); v != "" {
			s.outcome = Outcome{Kind: Violation, Reason: v}
			return
		}
		s.prog = tree.Set.Status.Progress
		s.gateRecheck = tree.Set.Status.GateRecheckIn
		if g := s.prog.Gate; g != nil && g.Reason == v1alpha1.ReasonAnalysisRunning {
			// only a scripted result measures it, at its own time (nextEvent)
			s.gateRecheck = 0
		}
		if tree.Set.Status.Rollback && !s.rolledBack {
			s.rollBack()
			continue
		}
		if tree.Set.Status.CurrentRevision == s.revs.Update.Name {
			s.revs.Current = s.revs.Update
		}
		acted := s.apply(tree)
		s.sample()
		if v := s.check.state(s); v != "" {
			s.outcome = Outcome{Kind: Violation, Reason: v}
			return
		}
		if acted {
			continue
		}
		if s.settled(tree) {
			if v := s.check.final(s); v != "" {
				s.outcome = Outcome{Kind: Violation, Reason: v}
				return
			}
			s.outcome = Outcome{Kind: Complete, RolledBack: s.rolledBack}
			return
		}
		s.endInstant()
		next, ok := s.nextEvent()
		if !ok || next > s.sc.MaxTime {
			s.outcome = Outcome{Kind: Stuck, Reason: stuckReason(tree)}
			return
		}
		s.now = next
	}
}

// settled: the rollout is complete, nothing is terminating and nothing is pending.
func (s *sim) settled(tree rollout.TreePlan) bool {
	if !tree.Set.Status.Complete || len(s.changes) > 0 || len(s.dels) > 0 {
		return false
	}
	return !s.anyPod(func(p *pod) bool { return p.terminating || p.readyAt.After(s.clock()) })
}

func stuckReason(tree rollout.TreePlan) string {
	for _, c := range tree.Set.Status.Conditions {
		if c.Type == v1alpha1.ConditionProgressing {
			return string(c.Reason) + ": " + c.Message
		}
	}
	return "no progress possible"
}

func (s *sim) input() rollout.SetInput {
	return rollout.SetInput{Spec: s.spec, Revisions: s.revs, Replicas: s.model.observe(s.spec.MinReadySeconds, s.clock()),
		Previous: s.prog, Now: s.clock(), Approved: s.approved, Measured: s.measure()}
}

// measure is the scripted result of the analysis the last plan waits for,
// once it is due; nil when there is none.
func (s *sim) measure() *rollout.GateMeasurement {
	g := s.prog.Gate
	if g == nil || g.Reason != v1alpha1.ReasonAnalysisRunning {
		return nil
	}
	var m *v1alpha1.AnalysisStatus
	if m, s.analyses = gate.TakeScripted(s.analyses, g.Name, s.now, s.clock()); m == nil {
		return nil
	}
	if m.Phase == v1alpha1.AnalysisPassed {
		s.check.pass(s.revs.Update.Name, g.Name)
	}
	return &rollout.GateMeasurement{Gate: g.Name, Status: *m}
}

// rollBack rolls the rollout back to the revision it came from, as the
// operator does for a failed analysis whose onFailure is Rollback.
func (s *sim) rollBack() {
	s.rolledBack = true
	s.revs.History = append(s.revs.History, s.revs.Update)
	s.revs.Update = s.revs.Current
	s.spec = s.sc.From
}

// applyDue applies spec changes and hand deletions due by now.
func (s *sim) applyDue() {
	for len(s.changes) > 0 && s.changes[0].At <= s.now {
		c := s.changes[0]
		s.changes = s.changes[1:]
		if c.Spec != nil {
			s.spec = c.Spec
		}
		if c.Revision != nil && c.Revision.Name != s.revs.Update.Name {
			s.revs.History = append(s.revs.History, s.revs.Update)
			s.revs.Update = *c.Revision
		}
	}
	for len(s.dels) > 0 && s.dels[0].At <= s.now {
		d := s.dels[0]
		s.dels = s.dels[1:]
		s.deleteByHand(d)
	}
	for len(s.approvs) > 0 && s.approvs[0].At <= s.now {
		s.approved = v1alpha1.ApprovalOf(s.revs.Update.Name, s.approvs[0].Gate)
		s.check.approve(s.revs.Update.Name, s.approvs[0].Gate)
		s.approvs = s.approvs[1:]
	}
}

func (s *sim) deleteByHand(d Deletion) {
	r := s.model.live(d.Replica)
	if r == nil {
		return
	}
	if g := r.group(d.Role); g != nil && d.Group == "" {
		if gr := g.live(d.Index); gr != nil {
			gr.terminate(s.clock(), s.sc.Grace)
			s.timeline = append(s.timeline, Action{At: s.now, Level: LevelPodCliqueScalingGroup, Replica: d.Replica, Role: d.Role,
				GroupReplica: -1, Index: d.Index, Op: OpDelete, From: gr.rev, ByHand: true})
		}
		return
	}
	var c *clique
	if d.Group == "" {
		c = r.clique(d.Role)
	} else if g := r.group(d.Group); g != nil {
		if gr := g.live(d.GroupReplica); gr != nil {
			c = gr.clique(d.Role)
		}
	}
	if c == nil {
		return
	}
	if p := c.liveAt(d.Index); p != nil {
		p.terminate(s.clock(), s.sc.Grace)
		s.timeline = append(s.timeline, Action{At: s.now, Level: LevelPodClique, Replica: d.Replica, Role: d.Role, Group: d.Group,
			GroupReplica: groupReplicaOf(d), Index: d.Index, Op: OpDelete, From: p.rev, ByHand: true})
	}
}

func groupReplicaOf(d Deletion) int32 {
	if d.Group == "" {
		return -1
	}
	return d.GroupReplica
}

// nextEvent is the earliest future instant at which something changes.
func (s *sim) nextEvent() (time.Duration, bool) {
	best, ok := time.Duration(0), false
	consider := func(t time.Time) {
		d := t.Sub(Epoch)
		if d > s.now && (!ok || d < best) {
			best, ok = d, true
		}
	}
	minReady := time.Duration(s.spec.MinReadySeconds) * time.Second
	s.anyPod(func(p *pod) bool {
		if p.terminating {
			consider(p.goneAt)
		} else if !p.readyAt.IsZero() {
			consider(p.readyAt)
			consider(p.readyAt.Add(minReady))
		}
		return false
	})
	for _, r := range s.model.replicas {
		if r.terminating {
			consider(r.goneAt)
		}
		for _, g := range r.groups {
			for _, gr := range g.replicas {
				if gr.terminating {
					consider(gr.goneAt)
				}
			}
		}
	}
	if len(s.changes) > 0 {
		consider(Epoch.Add(max(s.changes[0].At, s.now+1)))
	}
	if len(s.dels) > 0 {
		consider(Epoch.Add(max(s.dels[0].At, s.now+1)))
	}
	if len(s.approvs) > 0 {
		consider(Epoch.Add(max(s.approvs[0].At, s.now+1)))
	}
	if g := s.prog.Gate; g != nil && g.Reason == v1alpha1.ReasonAnalysisRunning {
		// the result scripted for the analysis waited for
		if i := slices.IndexFunc(s.analyses, func(a gate.Scripted) bool { return a.Gate == g.Name }); i >= 0 {
			consider(Epoch.Add(max(s.analyses[i].At, s.now+1)))
		}
	}
	if s.gateRecheck > 0 {
		consider(s.clock().Add(s.gateRecheck))
	}
	return best, ok
}

// anyPod reports whether pred holds for some pod; it visits every pod otherwise.
func (s *sim) anyPod(pred func(p *pod) bool) bool {
	visit := func(cs []*clique) bool {
		for _, c := range cs {
			for _, p := range c.pods {
				if pred(p) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range s.model.replicas {
		if visit(r.cliques) {
			return true
		}
		for _, g := range r.groups {
			for _, gr := range g.replicas {
				if visit(gr.cliques) {
					return true
				}
			}
		}
	}
	return false
}

// readyAt draws when a pod created now becomes ready; zero when a fault hits.
func (s *sim) readyAt(role string, broken bool) time.Time {
	s.created[role]++
	for _, f := range s.sc.Faults {
		if f.Role == role && f.After == s.created[role] {
			s.fired++
			return time.Time{}
		}
	}
	if broken {
		return time.Time{}
	}
	d := s.sc.Startup
	if s.sc.Jitter > 0 {
		d += time.Duration((s.rng.Float64()*2 - 1) * s.sc.Jitter * float64(s.sc.Startup))
	}
	return s.clock().Add(max(d, 0))
}

func (s *sim) result() Result {
	s.outcome.FaultsFired = s.fired
	sum := Summary{Steps: s.steps, PeakPods: s.peak, MinAvailable: s.minAvl}
	if n := len(s.timeline); n > 0 {
		sum.Duration = s.timeline[n-1].At
	}
	for _, r := range s.model.replicas {
		if _, ok := s.mixed[r.index]; !ok {
			s.mixed[r.index] = 0
		}
	}
	for i := range s.mixed {
		sum.MixedRevisionMoments = append(sum.MixedRevisionMoments, ReplicaFigure{Replica: i, Value: s.mixed[i]})
	}
	slices.SortFunc(sum.MixedRevisionMoments, func(a, b ReplicaFigure) int { return int(a.Replica - b.Replica) })
	return Result{Outcome: s.outcome, Timeline: s.timeline, Samples: s.samples, Summary: sum}
}
