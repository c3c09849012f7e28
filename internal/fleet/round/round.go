// Package round is one round of the hub's FederatedWorkload controller as a
// pure function: from what the hub observed (the workload, its Placement and
// the clusters it placed, the cluster sets, the MemberClusters, each member's
// object and status) and the clock, to what the hub does: the member objects
// to create, apply or delete and with which guard, the workload's status, the
// Events to record and when to look again. No client, no clock, no
// randomness: the controller (internal/hub/federatedworkload) and `lockstep
// plan` (internal/fleet/fleetplan) run the same rounds.
//
// A round divides the replicas over the placed clusters (internal/fleet/division),
// reads back what each member object holds and reports (internal/fleet/member),
// asks the fleet planner for the grants (internal/fleet/align) and encodes
// them into member objects (member.Build). Everything it needs is in its
// input, so a restarted hub resumes where the last one stopped.
//
// Where the hub's decisions live: on the member objects. Each object the hub
// writes carries, besides its share (spec.replicas) and the rollout fields of
// its grant, a record of that decision (annotation fleet.lockstep.dev/grant,
// member.Record): the share it was given, the grant, the template revision
// it was decided for and what the member may still act on until it observes
// the grant. A round reads all of it back from the objects it reads. The
// workload's status.clusters only reports it; a round falls back to it for
// what no object says: a member it cannot read this round, and an object an
// older hub wrote without a record. So the status can be wiped (a status
// update, a restore that does not bring it back) without changing what the
// hub does. When it is (no member listed, yet an object of the workload's
// found), the round reads every Ready member to find the workload's objects,
// and a member it cannot read, which nothing then says anything of, is taken
// to hold the most it could under the widest grant it could have been given,
// so the others get none of the budget it might be using (memory and
// takeUnknownAtMost in members.go).
//
// Ownership: the hub writes and deletes only member objects labelled
// fleet.lockstep.dev/federatedworkload=<namespace>.<name> of the workload
// (ownership.go). A member object is made with a plain create, which fails
// when the name is taken; it is applied to and deleted only as the object
// read, by UID. Another object under the name is a conflict: left alone,
// reported, and planned as a member with none of the units.
package round

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
)

// Input is everything a round decides from.
type Input struct {
	// Workload is the FederatedWorkload as read, status included: the status
	// reports what earlier rounds decided (each member's share and grant);
	// a round decides from it only for what no member object says.
	Workload *fleetv1alpha1.FederatedWorkload
	// Placement is the workload's Placement, nil when it does not exist.
	Placement *fleetv1alpha1.Placement
	// Placed is the union of the placement's PlacementDecisions (see
	// PlacedClusters), sorted.
	Placed []string
	// Sets, Bindings and MemberClusters decide which clusters the placement
	// may reach (fleet.Select), and give each cluster its labels and
	// readiness.
	Sets           []fleetv1alpha1.MemberClusterSet
	Bindings       []fleetv1alpha1.MemberClusterSetBinding
	MemberClusters []fleetv1alpha1.MemberCluster
	// Members are the member objects read, by cluster, for the clusters
	// ReadsOf names; a cluster missing here could not be read.
	Members map[string]Observed
	// Groups are the placement's decision groups (DecisionGroups), which
	// spec.rolloutStrategy.stages cuts into stages.
	Groups []stages.Group
	// Now is the clock, for the member lost timeout and condition times.
	Now time.Time
	// RolloutPoll is how soon to look again while something moves and a
	// member object is not watched; Resync how soon once settled, or while
	// every member object is watched (Watched).
	RolloutPoll, Resync time.Duration
	// Watched: every member object read this round comes from a connection
	// that watches it, so any change of one runs the next round at once and
	// the poll is only a safety net.
	Watched bool
}

// Observed is what a read of one member found.
type Observed struct {
	// Read: the member answered the read of its object.
	Read bool
	// Object is the object of the template's kind under the workload's
	// namespace and name, nil when there is none.
	Object *unstructured.Unstructured
	// ReplicaSets are the ReplicaSets matching a Deployment member's selector;
	// ReplicaSetsRead is false when they could not be listed (the member is
	// then taken as settling: its grant is kept).
	ReplicaSets     []unstructured.Unstructured
	ReplicaSetsRead bool
}

// Reads is what a round needs read from the members.
type Reads struct {
	// Kind and Key name the member object.
	Kind schema.GroupVersionKind
	Key  types.NamespacedName
	// Clusters are the clusters to read, those whose MemberCluster is Ready:
	// the placed ones and those the status still lists; every Ready one when
	// the status lists none (a new workload, or a status lost: its objects
	// are looked for everywhere).
	Clusters []string
	// ReplicaSets: list the ReplicaSets of a Deployment found (see
	// member.WithReplicaSets).
	ReplicaSets bool
}

// Op is what a Write does to a member object.
type Op string

const (
	// Create makes the member object (and its namespace, when the member
	// lacks it). It fails when the name is taken: an object someone made
	// since the read is never taken over.
	Create Op = "Create"
	// Apply writes the hub's fields by server-side apply, forcing their
	// ownership, to the object read as the workload's: Object carries its UID
	// in metadata.uid, so the apiserver refuses the apply when the object
	// under the name is another one (metadata.uid is immutable) or is gone
	// (an apply would otherwise create it).
	Apply Op = "Apply"
	// Delete deletes the object read as the workload's, in the background,
	// with its UID and resourceVersion as preconditions: a delete never
	// reaches an object made under the name since the read, nor the same one
	// relabelled as someone else's.
	Delete Op = "Delete"
)

// Write is one write to one member.
type Write struct {
	Cluster string
	Op      Op
	// Object is what is sent: the whole member object for Create and Apply;
	// for Delete its kind, namespace and name.
	Object *unstructured.Unstructured
	// UID and ResourceVersion are a Delete's preconditions.
	UID             types.UID
	ResourceVersion string
}

// Event is an Event to record on the workload.
type Event struct {
	// Type is Normal or Warning.
	Type, Reason, Action, Message string
}

// Output is what the hub does after a round.
type Output struct {
	// Writes are the member writes, in cluster name order.
	Writes []Write
	// Status is the workload's whole status after the round.
	Status fleetv1alpha1.FederatedWorkloadStatus
	Events []Event
	// Requeue is when to run the next round; 0 waits for a change of the
	// workload (an invalid template or strategy).
	Requeue time.Duration
	// Stuck is why no round could be planned ("" when one was): the
	// Progressing reason, and nothing is written to any member.
	Stuck fleetv1alpha1.FederatedWorkloadReason
	// Plan is the fleet planner's answer (zero when Stuck).
	Plan align.Plan
	// Stages is the walk over the rollout's stages, nil without stages.
	Stages *stages.Plan
	// Members is each member as the round saw it, in name order.
	Members []MemberView
	// Unwritable lists the members whose object could not be built from the
	// template, with why; they get no write this round.
	Unwritable []string
}

// Plan runs one round.
func Plan(in Input) Output {
	fw := in.Workload
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		return stuck(in, fleetv1alpha1.FederatedWorkloadReasonInvalidTemplate, err.Error(), 0)
	}
	sc := scopeOf(in)
	if sc.stuck != "" {
		return stuck(in, sc.stuck, sc.why, in.Resync)
	}
	ms := observeMembers(in, tmpl, sc)
	plan, walk, err := planStaged(in, tmpl.Revision, ms, member.StrategyOf(fw))
	if err != nil {
		return stuck(in, fleetv1alpha1.FederatedWorkloadReasonAlignFailed, err.Error(), 0)
	}
	// What a member may still act on is counted from the share its object
	// held, before the round moves it.
	recordStillActing(ms, plan)
	holdShares(ms, plan)
	out := Output{Plan: plan}
	out.Writes, out.Unwritable = writesOf(fw, tmpl, ms, plan)
	out.Status, out.Events = report(in, tmpl, ms, plan, walk)
	for _, m := range ms {
		out.Members = append(out.Members, m.MemberView)
	}
	// Member statuses are polled: soon while anything moves, unless every
	// member object is watched (its changes run the rounds).
	out.Requeue = in.RolloutPoll
	if in.Watched || plan.Done && !slices.ContainsFunc(ms, func(m *observed) bool { return m.Leaving }) {
		out.Requeue = in.Resync
	}
	if walk != nil && walk.RecheckIn > 0 {
		out.Requeue = min(out.Requeue, walk.RecheckIn)
	}
	// A member that stops answering is lost at its timeout, which no event
	// announces: look again then.
	if d := nextLoss(fw, sc.clusters(), sc.mcs, in.Now); d > 0 {
		out.Requeue = min(out.Requeue, d)
	}
	out.Stages = walk
	return out
}

// ReadsOf is what the round of in needs read from the members: nothing when
// it cannot be planned (see Output.Stuck).
func ReadsOf(in Input) Reads {
	fw := in.Workload
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		return Reads{}
	}
	r := Reads{Kind: tmpl.Object.GroupVersionKind(), Key: types.NamespacedName{Namespace: fw.Namespace, Name: fw.Name},
		ReplicaSets: tmpl.Kind == member.Deployment}
	sc := scopeOf(in)
	if sc.stuck != "" {
		return r
	}
	for _, name := range sc.clusters() {
		if ready(sc.mcs[name]) {
			r.Clusters = append(r.Clusters, name)
		}
	}
	if len(fw.Status.Clusters) == 0 {
		// Nothing says where the workload's objects are: a cluster that left
		// the placement may still hold one, with units to move away. Only a
		// cluster bound to the namespace can have been given one.
		bound := boundClusters(in)
		var others []string
		for name, mc := range sc.mcs {
			if ready(mc) && bound[name] && !slices.Contains(r.Clusters, name) {
				others = append(others, name)
			}
		}
		slices.Sort(others)
		r.Clusters = append(r.Clusters, others...)
	}
	return r
}

// PlacedClusters is the sorted union of the clusters of a placement's
// PlacementDecisions: a cluster is placed while any of them lists it.
func PlacedClusters(decisions []fleetv1alpha1.PlacementDecision) []string {
	out := []string{}
	for i := range decisions {
		for _, d := range decisions[i].Status.Decisions {
			if !slices.Contains(out, d.ClusterName) {
				out = append(out, d.ClusterName)
			}
		}
	}
	slices.Sort(out)
	return out
}
