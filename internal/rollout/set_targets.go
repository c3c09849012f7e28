package rollout

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// updatingSet is the PCS replicas updating now, by index.
type updatingSet struct {
	selected *replicaView // RollingUpdate: the one replica updating
	steps    *stepState   // RollingUpdate with roleUpgrade: where selected stands
	progress []ReplicaProgress
	// gate is the checkpoint the rollout waits at: nothing new starts past it.
	gate *gateWait
}

func (u *updatingSet) has(index int32) bool {
	return slices.ContainsFunc(u.progress, func(p ReplicaProgress) bool { return p.Index == index })
}

// rolloutActive reports a revision change under way: the spec asks for a new
// revision, or units still run another one (the spec went back to the current
// revision before a rollout finished: its units must come back).
func (p *setPlanner) rolloutActive() bool {
	if p.in.Revisions.Update.Name != p.in.Revisions.Current.Name {
		return true
	}
	for _, v := range p.views {
		if v.obs != nil && !v.obs.Terminating && v.outdated {
			return true
		}
	}
	return false
}

func (p *setPlanner) updatingReplicas(level LevelPlan) *updatingSet {
	u := &updatingSet{}
	if p.paused() && p.shape.strategy == v1alpha1.ReplicaRecreateStrategyType {
		// A recreation under way when the pause came goes on until the replica
		// is up on the update revision; nothing new starts.
		for _, prev := range p.in.Previous.UpdatingReplicas {
			if v := p.view(prev.Index); v != nil && p.isRecreating(v, level) {
				u.progress = append(u.progress, p.replicaProgress(v.index, prev.Surge, nil))
			}
		}
		return u
	}
	if p.paused() || !p.rolloutActive() {
		// Without a revision change, a replica short of units is only scaling.
		return u
	}
	switch p.shape.strategy {
	case v1alpha1.RollingUpdateStrategyType:
		u.selected = p.selectReplica()
		if u.selected != nil && !p.started(u.selected) {
			// the next replica starts only past the checkpoint after the last
			if u.gate = p.replicaGate(); u.gate != nil {
				u.selected = nil
			}
		}
		if u.selected != nil {
			u.steps = p.stepState(u.selected)
			u.gate = u.steps.gate
			u.progress = append(u.progress, p.replicaProgress(u.selected.index, false, u.steps.status()))
		}
	case v1alpha1.ReplicaRecreateStrategyType:
		u.gate = p.replicaGate()
		for _, v := range p.views {
			if p.isRecreating(v, level) {
				surge := v.obs != nil && v.obs.Surge || v.index >= p.shape.replicas
				u.progress = append(u.progress, p.replicaProgress(v.index, surge, nil))
			}
		}
	}
	return u
}

func (p *setPlanner) view(index int32) *replicaView {
	for _, v := range p.views {
		if v.index == index && (v.obs == nil || !v.obs.Terminating) {
			return v
		}
	}
	for _, v := range p.views {
		if v.index == index {
			return v
		}
	}
	return nil
}

// isRecreating reports whether a PCS replica is part of a ReplicaRecreate update
// now: picked by this plan, on its way out, or on its way up at the new revision.
func (p *setPlanner) isRecreating(v *replicaView, level LevelPlan) bool {
	if !p.rolloutActive() {
		return false
	}
	if slices.Contains(level.Status.SelectedToUpdate, v.index) {
		return true
	}
	if v.obs == nil {
		return v.revision == p.in.Revisions.Update.Name
	}
	if v.obs.Terminating {
		return v.index < p.shape.replicas
	}
	return v.revision == p.in.Revisions.Update.Name && !v.available
}

// replicaProgress keeps the start time an updating replica already had.
func (p *setPlanner) replicaProgress(index int32, surge bool, step *RoleStepStatus) ReplicaProgress {
	started := p.in.Now
	for _, prev := range p.in.Previous.UpdatingReplicas {
		if prev.Index == index && !prev.StartedAt.IsZero() {
			started = prev.StartedAt
		}
	}
	return ReplicaProgress{Index: index, StartedAt: started, Surge: surge, RoleStep: step}
}

// selectReplica picks the one PCS replica a RollingUpdate works on: the replica
// already updating until it is done, else a replica whose surge units still
// hold pods (its update has not ended, though the progress that said so was
// lost), else the first outdated replica by (unscheduled, below
// minAvailable, lowest index). A replica is done when every unit of it runs
// the update revision and is available and its surge units are gone (done).
func (p *setPlanner) selectReplica() *replicaView {
	var candidates, ending []*replicaView
	for _, v := range p.views {
		if v.obs == nil || v.obs.Terminating || v.index < p.shape.partition || v.index >= p.shape.replicas {
			continue
		}
		for _, prev := range p.in.Previous.UpdatingReplicas {
			if prev.Index == v.index && !v.done() {
				return v
			}
		}
		switch {
		case len(v.surgeLeft) > 0:
			// only the replica updating surges: this one is in flight
			ending = append(ending, v)
		case !v.updated && v.outdated:
			candidates = append(candidates, v)
		}
	}
	if len(ending) > 0 {
		return ending[0]
	}
	if len(candidates) == 0 {
		return nil
	}
	return slices.MinFunc(candidates, func(a, b *replicaView) int {
		if c := cmpBool(!a.scheduled, !b.scheduled); c != 0 {
			return c
		}
		if c := cmpBool(!a.available, !b.available); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
}

// gateWait is a closed gate at a checkpoint.
type gateWait struct {
	name      string
	reachedAt time.Time
	measured  *v1alpha1.AnalysisStatus
	verdict   gate.Verdict
}

// checkpoint evaluates g at the checkpoint name; nil when it is open. The
// checkpoint was reached when the last plan of this rollout first waited at
// it, or now; its last measurement is the one just taken, or the one the
// last plan kept. A rollout back to the current revision (a rollback, a
// spec put back) passes every gate: it returns to what ran before.
func (p *setPlanner) checkpoint(g *v1alpha1.Gate, name string) *gateWait {
	if p.in.Revisions.Update.Name == p.in.Revisions.Current.Name {
		return nil
	}
	w := &gateWait{name: name, reachedAt: p.in.Now}
	prev := p.in.Previous
	if prev.Gate != nil && prev.Gate.Name == name && prev.UpdateRevision == p.in.Revisions.Update.Name && !prev.Gate.ReachedAt.IsZero() {
		w.reachedAt, w.measured = prev.Gate.ReachedAt, prev.Gate.Analysis
	}
	if m := p.in.Measured; m != nil && m.Gate == name {
		w.measured = &m.Status
	}
	w.verdict = gate.Evaluate(gate.Input{Gate: g, Name: name, Revision: p.in.Revisions.Update.Name, ReachedAt: w.reachedAt, Now: p.in.Now,
		Approved: p.in.Approved, Measured: w.measured, Conditions: p.in.Conditions})
	if w.verdict.Open {
		return nil
	}
	return w
}

// replicaGate is the closed checkpoint replicas-N that holds back the next
// PodCliqueSet replica, N the replicas at or above the partition whose update
// is done (under ReplicaRecreate: that run the update revision and are
// available); nil when none holds (no gate, no replica done yet, nothing left to
// start, or N passed already in this rollout). It is decided once per plan.
func (p *setPlanner) replicaGate() *gateWait {
	if p.gateDecided {
		return p.gate
	}
	p.gateDecided = true
	g := p.shape.spec.UpdateStrategy.Gate
	if g == nil || p.paused() || !p.rolloutActive() {
		return nil
	}
	n, waiting := int32(0), false
	recreate := p.shape.strategy == v1alpha1.ReplicaRecreateStrategyType
	for _, v := range p.views {
		if v.obs == nil || v.obs.Terminating || v.index < p.shape.partition || v.index >= p.shape.replicas {
			continue
		}
		switch {
		case recreate && v.revision == p.in.Revisions.Update.Name && v.available, !recreate && v.done():
			// ReplicaRecreate moves on as soon as a replica is available (its
			// budget counts it so): so does the gate. Surge replicas come
			// and go with the budget and count for no checkpoint.
			n++
		case !p.started(v):
			waiting = true
		}
	}
	if n == 0 || !waiting || n <= p.gatesPassed {
		return nil
	}
	if p.gate = p.checkpoint(g, gate.ReplicasName(n)); p.gate == nil {
		p.gatesPassed = n
	}
	return p.gate
}

// started reports whether a PodCliqueSet replica's update is under way: under
// ReplicaRecreate, it is made from the update revision or on its way out;
// else the last plan was updating it, its surge units still hold pods, or some unit of
// a role the rollout changes runs the update revision. A gate never stops a
// replica half-way.
func (p *setPlanner) started(v *replicaView) bool {
	if p.shape.strategy == v1alpha1.ReplicaRecreateStrategyType {
		// picked by the last plan is not started: the budget may have let
		// none of it go yet
		return v.revision == p.in.Revisions.Update.Name || v.obs != nil && v.obs.Terminating
	}
	for _, prev := range p.in.Previous.UpdatingReplicas {
		if prev.Index == v.index {
			return true
		}
	}
	if len(v.surgeLeft) > 0 {
		return true
	}
	for i := range v.roles {
		// a role the rollout does not change is on its update revision from the start
		rv := &v.roles[i]
		if name := rv.shape.name; p.updateRoleRevision(name) != p.currentRoleRevision(name) && rv.status.UpdatedReplicas > 0 {
			return true
		}
	}
	return false
}

// stepState is the selected replica's position in roleUpgrade.steps.
type stepState struct {
	steps   []v1alpha1.RoleUpgradeStep
	targets []int32 // updateTo resolved per step
	current int     // first unsatisfied step; len(steps) when all are satisfied
	ready   int32   // updated-and-ready units of the current step's role
	issued  bool    // the current step's role has all its allowed units updated
	// surgeLeft: the current step's role has its units but its surge units
	// still hold pods; the next step waits for them (the boundary rule)
	surgeLeft []string
	// gate: the current step is satisfied and its gate is closed
	gate *gateWait
}

// stepState finds the current step. A step once passed stays passed for this
// update revision (the index is kept in the progress), so a unit of an earlier
// role failing later does not send updated units of later roles back.
func (p *setPlanner) stepState(v *replicaView) *stepState {
	s := &stepState{steps: p.shape.steps}
	if len(s.steps) == 0 {
		return s
	}
	for _, st := range s.steps {
		n, _ := ResolveUpdateTo(st.UpdateTo, p.shape.role(st.Role).replicas)
		s.targets = append(s.targets, n)
	}
	if p.in.Previous.UpdateRevision == p.in.Revisions.Update.Name {
		for _, prev := range p.in.Previous.UpdatingReplicas {
			if prev.Index == v.index && prev.RoleStep != nil {
				s.current = min(int(prev.RoleStep.Index), len(s.steps))
			}
		}
	}
	for ; s.current < len(s.steps); s.current++ {
		rv := v.role(s.steps[s.current].Role)
		s.ready, s.issued = rv.status.UpdatedReadyReplicas, rv.status.UpdatedReplicas >= s.targets[s.current]
		if s.ready < s.targets[s.current] {
			break
		}
		if len(rv.surgeLeft) > 0 {
			s.surgeLeft = rv.surgeLeft
			break
		}
		if g := s.steps[s.current].Gate; g != nil {
			if s.gate = p.checkpoint(g, gate.StepName(v.index, s.current+1)); s.gate != nil {
				break
			}
		}
	}
	return s
}

// roleCap is how many units of role may be updated at the current step: the
// highest updateTo of the role among the steps started so far, 0 for a role whose
// first step has not started, no cap once every step is satisfied.
func (s *stepState) roleCap(role string) *int32 {
	if s == nil || s.current >= len(s.steps) {
		return nil
	}
	c := int32(0)
	for j := 0; j <= s.current; j++ {
		if s.steps[j].Role == role {
			c = max(c, s.targets[j])
		}
	}
	return &c
}

func (s *stepState) status() *RoleStepStatus {
	if s == nil || len(s.steps) == 0 {
		return nil
	}
	if s.current >= len(s.steps) {
		return &RoleStepStatus{Index: int32(len(s.steps))}
	}
	return &RoleStepStatus{Index: int32(s.current), Role: s.steps[s.current].Role, Target: s.targets[s.current], UpdatedAndReady: s.ready}
}

func (v *replicaView) role(name string) *roleView {
	for i := range v.roles {
		if v.roles[i].shape.name == name {
			return &v.roles[i]
		}
	}
	return nil
}

// replicaPlan gives every child of a PCS replica its target.
func (p *setPlanner) replicaPlan(v *replicaView, u *updatingSet) ReplicaPlan {
	rp := ReplicaPlan{Index: v.index, Updating: u.has(v.index)}
	if u.selected == v {
		rp.RoleStep = u.steps.status()
	}
	for i := range v.roles {
		rv := &v.roles[i]
		ct := ChildTarget{Role: rv.shape.name, Target: p.childTarget(v, rv, u)}
		if rv.shape.group {
			rp.Groups = append(rp.Groups, ct)
		} else {
			rp.Cliques = append(rp.Cliques, ct)
		}
	}
	return rp
}

func (p *setPlanner) childType() v1alpha1.UpdateStrategyType {
	if p.shape.strategy == v1alpha1.OnDeleteStrategyType {
		return v1alpha1.OnDeleteStrategyType
	}
	return v1alpha1.RollingUpdateStrategyType
}

func (p *setPlanner) childTarget(v *replicaView, rv *roleView, u *updatingSet) *Target {
	role := rv.shape.name
	if p.shape.strategy == v1alpha1.ReplicaRecreateStrategyType {
		// paused or not: a replica runs the revision it was made from
		return p.pinnedTarget(v, rv)
	}
	if p.paused() {
		return p.frozenTarget(rv)
	}
	t := &Target{Type: p.childType(), SetRevision: p.in.Revisions.Update.Name,
		UpdateRevision: p.updateRoleRevision(role), CurrentRevision: p.currentRoleRevision(role)}
	switch {
	case v.index < p.shape.partition || v.index >= p.shape.replicas:
		t.MaxUpdated = ptr.To(rv.status.UpdatedReplicas)
	case p.shape.strategy == v1alpha1.OnDeleteStrategyType:
	case u.selected == v:
		t.MaxUpdated = u.steps.roleCap(role)
	case v.obs == nil || v.updated || v.current:
		// a brand-new or finished replica runs the update revision throughout,
		// also when it is scaled out or in while others update
	case t.UpdateRevision == t.CurrentRevision && rv.allAt(t.UpdateRevision):
		// nothing to hold back (a replica coming up, say): a cap would only
		// follow the updated count, a spec write per unit made
	default:
		t.MaxUpdated = ptr.To(rv.status.UpdatedReplicas)
	}
	return t
}

// frozenTarget keeps a child where it is while paused: its target revision stays
// and its updated count may not grow (nor shrink) beyond the replacements
// already under way when the pause began. A child created while paused runs the
// current revision.
func (p *setPlanner) frozenTarget(rv *roleView) *Target {
	if rv.target == nil {
		role := rv.shape.name
		cur := p.currentRoleRevision(role)
		return &Target{Type: p.childType(), SetRevision: p.in.Revisions.Current.Name, UpdateRevision: cur, CurrentRevision: cur}
	}
	t := *rv.target
	pol := Policy{Replicas: rv.replicas, UpdateRevision: t.UpdateRevision, CurrentRevision: t.UpdateRevision}
	v := observeLevel(pol, Fenceposts{MaxUnavailable: 1}, rv.units, false)
	n := v.updatedRegular
	switch {
	case p.in.Previous.Paused:
		if t.MaxUpdated != nil && *t.MaxUpdated > n {
			// The cap was frozen by an earlier paused plan: a unit updated before
			// the pause and deleted since comes back updated, not on the old revision.
			n = *t.MaxUpdated
		}
	default:
		// The first paused plan: an index emptied before the pause (a
		// replacement under way) is refilled on the update revision, as it would
		// have been, within the cap it was emptied under. It never comes back
		// on the old revision.
		room := v.vacancies
		if t.MaxUpdated != nil {
			room = min(room, max(0, *t.MaxUpdated-n))
		}
		n += room
	}
	t.MaxUpdated = ptr.To(n)
	return &t
}

// pinnedTarget keeps every child of a ReplicaRecreate replica on the revision the
// replica was made from: a replica never runs two revisions. Its children
// replace nothing for an update (OnDelete): a replica is updated whole, within
// the PodCliqueSet's budget, so a pod that looks outdated inside it (its
// revision label edited by someone else) is not replaced within the clique's
// own budget but waits for the replica's turn. A pod deleted or failed comes
// back on the replica's revision, as always.
func (p *setPlanner) pinnedTarget(v *replicaView, rv *roleView) *Target {
	set, ok := p.in.Revisions.find(v.revision)
	if !ok {
		return rv.target
	}
	rev, ok := set.Role(rv.shape.name)
	if !ok {
		return rv.target
	}
	return &Target{Type: v1alpha1.OnDeleteStrategyType, SetRevision: set.Name, UpdateRevision: rev, CurrentRevision: rev}
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}
