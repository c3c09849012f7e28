package monitor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/api/limit"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/invariant"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// target is one PodCliqueSet spec the operator may be acting on, with what the
// checks derive from it: the template hash every clique's pods are moving to.
type target struct {
	generation int64
	spec       v1alpha1.PodCliqueSetSpec // defaulted
	hashes     map[string]string         // clique name → pod template hash
	// key names the rollout target (every clique's hash): role-step progress is
	// kept per key, so a new template starts the steps over.
	key   string
	hold  invariant.Hold
	steps []invariant.Step
	// observedAt is when the PodCliqueSet status first reported this spec's
	// generation: the operator plans with it from then on. Zero until then.
	observedAt time.Time
}

func newTarget(pcs *v1alpha1.PodCliqueSet) (*target, error) {
	p := pcs.DeepCopy()
	p.Default()
	t := &target{generation: p.Generation, spec: p.Spec, hashes: map[string]string{}, hold: invariant.HoldOf(&p.Spec)}
	var parts []string
	for i := range t.spec.Template.Cliques {
		c := &t.spec.Template.Cliques[i]
		h, err := revision.CliqueHash(c)
		if err != nil {
			return nil, fmt.Errorf("hashing the template of clique %s: %w", c.Name, err)
		}
		t.hashes[c.Name] = h
		parts = append(parts, c.Name+"="+h)
	}
	slices.Sort(parts)
	t.key = strings.Join(parts, ",")
	var err error
	if t.steps, err = invariant.Steps(&t.spec); err != nil {
		return nil, err
	}
	// Resolve every limit once so that a spec the checks cannot read is refused
	// here rather than silently skipped later.
	if _, err := t.setLimits(t.spec.DesiredReplicas()); err != nil {
		return nil, err
	}
	for _, c := range t.spec.Template.Cliques {
		if _, err := t.cliqueLimits(c.Name, c.Replicas); err != nil {
			return nil, fmt.Errorf("clique %s: %w", c.Name, err)
		}
	}
	for _, g := range t.spec.Template.PodCliqueScalingGroups {
		if _, err := t.groupLimits(g.Name, g.Replicas); err != nil {
			return nil, fmt.Errorf("scaling group %s: %w", g.Name, err)
		}
	}
	return t, nil
}

// strategy is the update type, with RollingUpdate's synonym folded in.
func (t *target) strategy() v1alpha1.UpdateStrategyType {
	if t.spec.UpdateStrategy.Type.IsRollingUpdate() {
		return v1alpha1.RollingUpdateStrategyType
	}
	return t.spec.UpdateStrategy.Type
}

func (t *target) clique(name string) *v1alpha1.PodCliqueTemplateSpec {
	return t.spec.Template.Clique(name)
}

// updated reports whether a pod runs the template its clique moves to.
func (t *target) updated(p podState) bool {
	h, ok := t.hashes[p.Clique]
	return ok && p.TemplateHash == h
}

// setLimits are the PCS-replica level's limits: only ReplicaRecreate replaces
// (and surges) whole replicas; the other types never surge them.
func (t *target) setLimits(replicas int32) (rollout.Fenceposts, error) {
	if t.strategy() != v1alpha1.ReplicaRecreateStrategyType {
		return rollout.Fenceposts{MaxUnavailable: 1}, nil
	}
	unavailable, surge := t.spec.UpdateStrategy.RollingUpdate.Limits()
	return rollout.ResolveFenceposts(surge, unavailable, replicas)
}

// cliqueLimits are a clique's limits for its pods. Member cliques of a scaling
// group never surge: their group replica is the unit that is replaced.
func (t *target) cliqueLimits(name string, replicas int32) (rollout.Fenceposts, error) {
	c := t.clique(name)
	if c == nil {
		return rollout.Fenceposts{}, fmt.Errorf("no clique %s in the spec", name)
	}
	if t.spec.Template.ScalingGroupOf(name) != nil {
		return rollout.Fenceposts{MaxUnavailable: 1}, nil
	}
	return t.componentLimits(c.UpdateStrategy, replicas)
}

// groupLimits are a scaling group's limits for its group replicas.
func (t *target) groupLimits(name string, replicas int32) (rollout.Fenceposts, error) {
	g := t.spec.Template.ScalingGroup(name)
	if g == nil {
		return rollout.Fenceposts{}, fmt.Errorf("no scaling group %s in the spec", name)
	}
	return t.componentLimits(g.UpdateStrategy, replicas)
}

// componentLimits: a clique's or group's own limits apply under RollingUpdate;
// the other types use the defaults, and OnDelete never surges.
func (t *target) componentLimits(s *v1alpha1.ComponentUpdateStrategy, replicas int32) (rollout.Fenceposts, error) {
	unavailable, surge := limit.Defaulted(nil, nil)
	if t.strategy() == v1alpha1.RollingUpdateStrategyType {
		unavailable, surge = s.Limits()
	}
	fp, err := rollout.ResolveFenceposts(surge, unavailable, replicas)
	if t.strategy() == v1alpha1.OnDeleteStrategyType {
		fp.MaxSurge = 0
	}
	return fp, err
}

// summary is the one line a spec change leaves in the timeline.
func (t *target) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d %s replicas %d", t.generation, t.strategy(), t.spec.DesiredReplicas())
	if t.hold.Paused {
		b.WriteString(" paused")
	}
	if p := t.hold.Partition; p > 0 {
		fmt.Fprintf(&b, " partition %d", p)
	}
	fmt.Fprintf(&b, " templates %s", t.key)
	return b.String()
}

// specTracker keeps the specs the operator may still be acting on. Watches of
// different kinds are not ordered with each other, so a pod event can arrive
// before the spec change that caused it, or after a spec change the operator has
// not seen yet. A check breaks only when it breaks under every live spec.
type specTracker struct {
	// grace is how long a superseded spec stays live after the PodCliqueSet's
	// status reports the newer generation (its children's controllers may still
	// act on what they were told before).
	grace time.Duration
	// maxLag bounds how long a superseded spec stays live when the status never
	// reports the newer generation.
	maxLag  time.Duration
	entries []specEntry // oldest first; the last one is the newest spec
}

type specEntry struct {
	target       *target
	supersededAt time.Time // zero for the newest
	observedAt   time.Time // when status.observedGeneration first reached this generation
}

// add records a spec and reports whether it is newer than every spec known. A
// spec older than the newest (a stale watch event after a fresh read) is ignored.
func (s *specTracker) add(t *target, now time.Time) bool {
	if n := len(s.entries); n > 0 {
		newest := &s.entries[n-1]
		if t.generation <= newest.target.generation {
			return false
		}
		newest.supersededAt = now
	}
	s.entries = append(s.entries, specEntry{target: t})
	return true
}

// observe records the PodCliqueSet status' observedGeneration and reports
// whether it marked a spec as seen by the operator.
func (s *specTracker) observe(generation int64, now time.Time) bool {
	changed := false
	for i := range s.entries {
		e := &s.entries[i]
		if e.observedAt.IsZero() && e.target.generation <= generation {
			e.observedAt, changed = now, true
			e.target.observedAt = now
		}
	}
	return changed
}

// live returns the specs the operator may be acting on at now, newest last, and
// forgets the ones retired.
func (s *specTracker) live(now time.Time) []*target {
	var kept []specEntry
	for i, e := range s.entries {
		if i == len(s.entries)-1 || now.Before(s.retireAt(i)) {
			kept = append(kept, e)
		}
	}
	s.entries = kept
	out := make([]*target, 0, len(kept))
	for _, e := range kept {
		out = append(out, e.target)
	}
	return out
}

func (s *specTracker) retireAt(i int) time.Time {
	e, next := s.entries[i], s.entries[i+1]
	if next.observedAt.IsZero() {
		return e.supersededAt.Add(s.maxLag)
	}
	return later(e.supersededAt, next.observedAt).Add(s.grace)
}

func (s *specTracker) newest() *target {
	if len(s.entries) == 0 {
		return nil
	}
	return s.entries[len(s.entries)-1].target
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
