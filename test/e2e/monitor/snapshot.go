package monitor

import (
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// cliqueKey locates one PodClique of the PodCliqueSet by its labels: a standalone
// clique of a PCS replica, or a member clique of one scaling-group replica.
type cliqueKey struct {
	Replica      int32
	Group        string // "" for a standalone clique
	GroupReplica int32  // -1 for a standalone clique
	Clique       string
}

// role is what roleUpgrade.steps call this clique's role: the scaling group for a
// member clique, the clique itself otherwise.
func (k cliqueKey) role() string {
	if k.Group != "" {
		return k.Group
	}
	return k.Clique
}

func (k cliqueKey) String() string {
	if k.Group == "" {
		return fmt.Sprintf("replica %d clique %s", k.Replica, k.Clique)
	}
	return fmt.Sprintf("replica %d group %s-%d clique %s", k.Replica, k.Group, k.GroupReplica, k.Clique)
}

// podState is what the monitor keeps of one pod.
type podState struct {
	cliqueKey
	Name         string
	Index        int32
	TemplateHash string
	SetRevision  string
	Labels       map[string]string
	Created      time.Time
	Node         string
	Ready        bool
	ReadySince   time.Time
	// Finished pods (Succeeded or Failed) never become ready again.
	Finished    bool
	Terminating bool
	// DeleteRequested is when the deletion was asked for: the deletionTimestamp
	// minus the grace period. Zero while the pod is not terminating.
	DeleteRequested time.Time
	// Grace is the deletion's grace period, once the pod is terminating: the
	// operator and the garbage collector delete with the pod's own, a node
	// agent with 0 (the timeline shows it, to tell deleters apart).
	Grace *int64
	// Doomed: the pod's PodClique is being deleted, so the garbage collector
	// will delete the pod; it is no longer available from that moment, when
	// its deletion was decided and judged.
	Doomed bool
	// UnreadyAt is when the monitor saw the pod turn unready, and
	// WasReadySince when it had been ready from; zero while ready. ReadyAt is
	// when the monitor saw it turn ready (zero: ready when first seen).
	UnreadyAt, WasReadySince, ReadyAt time.Time
}

// unseenChange is how old a pod's change (a failure, or turning ready) may be
// and still be unknown to the operator when it acts: its decisions come from
// a watch cache that shows a change some milliseconds later. A deletion is
// judged against the pods as they are and, if that breaks the floor, against
// the pods as they were at each moment of the last unseenChange (see asOf):
// the operator saw one of those. It breaks the floor only if it does at every
// one. A Deployment's maxUnavailable bounds the same way what the controller
// does, not failures that arrive meanwhile. The suite's races with the crash
// and NotReady faults came within 40 ms.
const unseenChange = 100 * time.Millisecond

// available is Deployment's notion: ready for minReadySeconds, and not going away.
func (p podState) available(minReadySeconds int32, now time.Time) bool {
	return !p.Terminating && !p.Doomed && !p.Finished && rollout.PodAvailable(p.Ready, p.ReadySince, minReadySeconds, now)
}

// podAvailable is p's availability in this snapshot: as it is or, in a view
// asOf an earlier moment, as it was then (its last change undone if it came
// after that moment).
func (s *snapshot) podAvailable(p podState, minReadySeconds int32, now time.Time) bool {
	if !s.asOf.IsZero() && !p.Terminating && !p.Doomed && !p.Finished {
		if !p.Ready && !p.UnreadyAt.IsZero() && p.UnreadyAt.After(s.asOf) {
			return rollout.PodAvailable(true, p.WasReadySince, minReadySeconds, s.asOf)
		}
		if p.Ready && !p.ReadyAt.IsZero() && p.ReadyAt.After(s.asOf) {
			return false
		}
	}
	return p.available(minReadySeconds, now)
}

// recentChanges are the moments in (now-d, now] at which a pod turned ready
// or unready, and now-d itself: the views a deletion at now may have come from.
func (s *snapshot) recentChanges(now time.Time, d time.Duration) []time.Time {
	out := []time.Time{now.Add(-d)}
	for _, p := range s.pods {
		for _, t := range []time.Time{p.ReadyAt, p.UnreadyAt} {
			if t.After(now.Add(-d)) && !t.After(now) {
				out = append(out, t)
			}
		}
	}
	return out
}

// childState is one PodClique or PodCliqueScalingGroup (Clique is "" and
// GroupReplica -1 for a scaling group).
type childState struct {
	cliqueKey
	Name        string
	Replicas    int32
	Terminating bool
}

// snapshot is the monitor's view of the PodCliqueSet's objects at one moment.
// Values are never mutated in place: an event produces a new snapshot, so the
// checks can compare the one before with the one after.
type snapshot struct {
	pods    map[string]podState
	cliques map[string]childState
	groups  map[string]childState
	// asOf, when set, makes the snapshot a view of the pods' readiness at
	// that earlier moment.
	asOf time.Time
}

// at is the snapshot as the operator may have seen it at an earlier moment.
func (s *snapshot) at(t time.Time) *snapshot {
	v := *s
	v.asOf = t
	return &v
}

func newSnapshot() *snapshot {
	return &snapshot{pods: map[string]podState{}, cliques: map[string]childState{}, groups: map[string]childState{}}
}

func (s *snapshot) clone() *snapshot {
	return &snapshot{pods: maps.Clone(s.pods), cliques: maps.Clone(s.cliques), groups: maps.Clone(s.groups)}
}

// podsIn are the pods of one PodClique, terminating ones included.
func (s *snapshot) podsIn(k cliqueKey) []podState {
	var out []podState
	for _, p := range s.pods {
		if p.cliqueKey == k {
			out = append(out, p)
		}
	}
	return out
}

// podsOfRole are the pods of one role (standalone clique or scaling group) of a PCS replica.
func (s *snapshot) podsOfRole(replica int32, role string) []podState {
	var out []podState
	for _, p := range s.pods {
		if p.Replica == replica && p.role() == role {
			out = append(out, p)
		}
	}
	return out
}

// groupReplicaIndices are the scaling-group replicas that exist in a PCS replica:
// indices held by any pod or PodClique, terminating ones included, as the planner
// counts them.
func (s *snapshot) groupReplicaIndices(replica int32, group string) map[int32]bool {
	out := map[int32]bool{}
	for _, p := range s.pods {
		if p.Replica == replica && p.Group == group {
			out[p.GroupReplica] = true
		}
	}
	for _, c := range s.cliques {
		if c.Replica == replica && c.Group == group {
			out[c.GroupReplica] = true
		}
	}
	return out
}

// liveGroupReplicas are the group replicas with a pod or PodClique not
// terminating (a doomed pod is terminating).
func (s *snapshot) liveGroupReplicas(replica int32, group string) map[int32]bool {
	live := map[int32]bool{}
	for _, p := range s.pods {
		if p.Replica == replica && p.Group == group && !p.Terminating && !p.Doomed {
			live[p.GroupReplica] = true
		}
	}
	for _, c := range s.cliques {
		if c.Replica == replica && c.Group == group && !c.Terminating {
			live[c.GroupReplica] = true
		}
	}
	return live
}

// replicaIndices are the PCS replicas that exist: indices held by any pod,
// PodClique or PodCliqueScalingGroup, terminating ones included.
func (s *snapshot) replicaIndices() map[int32]bool {
	out := map[int32]bool{}
	for _, p := range s.pods {
		out[p.Replica] = true
	}
	for _, c := range s.cliques {
		out[c.Replica] = true
	}
	for _, g := range s.groups {
		out[g.Replica] = true
	}
	return out
}

// cliqueObjectReplicas is spec.replicas of the PodClique at k: none or one.
func (s *snapshot) cliqueObjectReplicas(k cliqueKey) []int32 {
	for _, c := range s.cliques {
		if c.cliqueKey == k && !c.Terminating {
			return []int32{c.Replicas}
		}
	}
	return nil
}

// groupObjectReplicas is spec.replicas of a PCS replica's
// PodCliqueScalingGroup: none or one.
func (s *snapshot) groupObjectReplicas(replica int32, group string) []int32 {
	for _, g := range s.groups {
		if g.Replica == replica && g.Group == group && !g.Terminating {
			return []int32{g.Replicas}
		}
	}
	return nil
}

// podStateOf reads a pod's labels and status. Indices come from labels, never
// from names; a pod without them is not one the monitor can place.
func podStateOf(pod *corev1.Pod) (podState, error) {
	k, err := keyOf(pod.Labels)
	if err != nil {
		return podState{}, err
	}
	index, err := intLabel(pod.Labels, v1alpha1.LabelPodIndex)
	if err != nil {
		return podState{}, err
	}
	p := podState{
		cliqueKey:    k,
		Name:         pod.Name,
		Index:        index,
		TemplateHash: pod.Labels[v1alpha1.LabelTemplateHash],
		SetRevision:  pod.Labels[v1alpha1.LabelPodCliqueSetRevision],
		Labels:       pod.Labels,
		Created:      pod.CreationTimestamp.Time,
		Node:         pod.Spec.NodeName,
		Finished:     pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed,
		Terminating:  pod.DeletionTimestamp != nil,
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			p.Ready, p.ReadySince = true, c.LastTransitionTime.Time
		}
	}
	if pod.DeletionTimestamp != nil {
		p.DeleteRequested = deletionRequested(pod.ObjectMeta)
		p.Grace = pod.DeletionGracePeriodSeconds
	}
	return p, nil
}

// deletionRequested recovers when a delete was issued: the apiserver sets
// deletionTimestamp to that moment plus the grace period.
func deletionRequested(m metav1.ObjectMeta) time.Time {
	t := m.DeletionTimestamp.Time
	if m.DeletionGracePeriodSeconds != nil {
		t = t.Add(-time.Duration(*m.DeletionGracePeriodSeconds) * time.Second)
	}
	return t
}

func cliqueStateOf(pc *v1alpha1.PodClique) (childState, error) {
	k, err := keyOf(pc.Labels)
	if err != nil {
		return childState{}, err
	}
	return childState{cliqueKey: k, Name: pc.Name, Replicas: pc.Spec.Replicas, Terminating: pc.DeletionTimestamp != nil}, nil
}

func groupStateOf(g *v1alpha1.PodCliqueScalingGroup) (childState, error) {
	replica, err := intLabel(g.Labels, v1alpha1.LabelPodCliqueSetReplicaIndex)
	if err != nil {
		return childState{}, err
	}
	name := g.Labels[v1alpha1.LabelPodCliqueScalingGroup]
	if name == "" {
		return childState{}, fmt.Errorf("label %s is missing", v1alpha1.LabelPodCliqueScalingGroup)
	}
	k := cliqueKey{Replica: replica, Group: name, GroupReplica: -1}
	return childState{cliqueKey: k, Name: g.Name, Replicas: g.Spec.Replicas, Terminating: g.DeletionTimestamp != nil}, nil
}

// keyOf reads the PodClique an object belongs to from its labels.
func keyOf(l map[string]string) (cliqueKey, error) {
	replica, err := intLabel(l, v1alpha1.LabelPodCliqueSetReplicaIndex)
	if err != nil {
		return cliqueKey{}, err
	}
	k := cliqueKey{Replica: replica, Clique: l[v1alpha1.LabelClique], GroupReplica: -1}
	if k.Clique == "" {
		return cliqueKey{}, fmt.Errorf("label %s is missing", v1alpha1.LabelClique)
	}
	if g := l[v1alpha1.LabelPodCliqueScalingGroup]; g != "" {
		if k.GroupReplica, err = intLabel(l, v1alpha1.LabelPodCliqueScalingGroupReplicaIndex); err != nil {
			return cliqueKey{}, err
		}
		k.Group = g
	}
	return k, nil
}

func intLabel(l map[string]string, key string) (int32, error) {
	v, ok := l[key]
	if !ok {
		return 0, fmt.Errorf("label %s is missing", key)
	}
	n, ok := v1alpha1.IndexLabel(l, key)
	if !ok {
		return 0, fmt.Errorf("label %s=%q is not an index", key, v)
	}
	return n, nil
}
