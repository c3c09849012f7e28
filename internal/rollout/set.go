package rollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Target is what a PodCliqueSet tells one child (a PodClique or a
// PodCliqueScalingGroup): which template to run and how far it may update now.
// The child plans its own units from it and never reads its parent's status.
type Target struct {
	Type v1alpha1.UpdateStrategyType
	// SetRevision is the PodCliqueSet revision the child's template is taken from
	// (the child's spec.revision).
	SetRevision string
	// UpdateRevision is the role's template revision the child moves to.
	UpdateRevision string
	// CurrentRevision is the role's template revision a held-back unit is recreated at.
	CurrentRevision string
	// MaxUpdated caps units at UpdateRevision (nil: no cap).
	MaxUpdated *int32
}

// RoleRevision is the template revision of one role (clique or scaling group).
type RoleRevision struct {
	Role, Revision string
}

// SetRevision names one PodCliqueSet revision and the template revision of every
// role in it: standalone cliques, scaling groups and the cliques inside groups.
type SetRevision struct {
	Name  string
	Roles []RoleRevision
}

// Role returns the template revision of role at this set revision.
func (s SetRevision) Role(role string) (string, bool) {
	for _, r := range s.Roles {
		if r.Role == role {
			return r.Revision, true
		}
	}
	return "", false
}

// Revisions are the set revisions the planner knows.
type Revisions struct {
	// Current is what every replica ran when the last rollout completed; Update is
	// made from the current spec. They are equal when no rollout is under way.
	Current, Update SetRevision
	// History holds older retained revisions, so that a replica made from an
	// intermediate revision keeps its children on it under ReplicaRecreate.
	History []SetRevision
}

// first returns the newest set revision matching pred: Update, Current, then
// History from the newest.
func (r Revisions) first(pred func(s *SetRevision) bool) (SetRevision, bool) {
	if pred(&r.Update) {
		return r.Update, true
	}
	if pred(&r.Current) {
		return r.Current, true
	}
	for i := len(r.History) - 1; i >= 0; i-- {
		if pred(&r.History[i]) {
			return r.History[i], true
		}
	}
	return SetRevision{}, false
}

// find returns the set revision called name.
func (r Revisions) find(name string) (SetRevision, bool) {
	return r.first(func(s *SetRevision) bool { return s.Name == name })
}

// Holding returns the set revision in which role has template revision rev:
// Current, Update, then History from the newest. Every set revision that holds
// it has the same template for the role; Current and Update are never trimmed.
func (r Revisions) Holding(role, rev string) (SetRevision, bool) {
	if got, ok := r.Current.Role(role); ok && got == rev {
		return r.Current, true
	}
	return r.first(func(s *SetRevision) bool {
		got, ok := s.Role(role)
		return ok && got == rev
	})
}

// CliqueObservation is one observed PodClique.
type CliqueObservation struct {
	Name string
	// Target is the target currently written in the child's spec; nil when the
	// child does not exist yet.
	Target *Target
	// SpecReplicas is the child's spec.replicas, which its /scale subresource
	// (an HPA) may have moved away from the template's; 0 means the template's.
	SpecReplicas int32
	// TemplateReplicas is the template replicas the PodCliqueSet last wrote into
	// the child (see ChildReplicas).
	TemplateReplicas int32
	Pods             []Unit
	// MinAvailable is the clique's own minimum when it is a member of a group
	// replica made from an older shape; 0 means the spec's. A group replica is
	// judged by the shape it was made with, not the one it is moving to.
	MinAvailable int32
	// Report is what the PodClique's own status says (see Report); nil when
	// there is none to wait for.
	Report *Report
}

// GroupReplicaObservation is one observed scaling-group replica.
type GroupReplicaObservation struct {
	Index int32
	// Revision is the group's template revision the replica was made from.
	Revision    string
	Surge       bool
	Terminating bool
	CreatedAt   time.Time
	// Cliques are the member PodCliques of this group replica.
	Cliques []CliqueObservation
}

// GroupObservation is one observed PodCliqueScalingGroup.
type GroupObservation struct {
	Name   string
	Target *Target
	// SpecReplicas and TemplateReplicas: see CliqueObservation.
	SpecReplicas, TemplateReplicas int32
	Replicas                       []GroupReplicaObservation
	// Report is what the group's own status says (see Report); nil when there
	// is none to wait for.
	Report *Report
}

// ReplicaObservation is one observed PodCliqueSet replica.
type ReplicaObservation struct {
	Index int32
	// Revision is the PodCliqueSet revision its children were made from.
	Revision    string
	Surge       bool
	Terminating bool
	CreatedAt   time.Time
	Cliques     []CliqueObservation // standalone cliques only
	Groups      []GroupObservation
}

// ProgressCounts are the figures whose rise counts as progress: updated, ready
// and available units summed over every level.
type ProgressCounts struct {
	Updated, Ready, Available int32
}

// RoleStepStatus is where a PCS replica stands in roleUpgrade.steps.
type RoleStepStatus struct {
	// Index of the current step; len(steps) once every step is satisfied.
	Index           int32
	Role            string
	Target          int32
	UpdatedAndReady int32
}

// ReplicaProgress is the progress of one updating PCS replica.
type ReplicaProgress struct {
	Index     int32
	StartedAt time.Time
	Surge     bool
	RoleStep  *RoleStepStatus
}

// Progress is the update progress carried from one plan to the next (it lives in
// the PodCliqueSet status). Zero times mean unset.
type Progress struct {
	// Paused: the plan was made while the PodCliqueSet was paused (a controller
	// reads it back from the Progressing condition's Paused reason).
	Paused          bool
	UpdateRevision  string
	UpdateStartedAt time.Time
	UpdateEndedAt   time.Time
	LastProgressAt  time.Time
	// Counts are the highest counts seen since the rollout started (or was last
	// resumed): only a count rising above them is progress.
	Counts           ProgressCounts
	UpdatingReplicas []ReplicaProgress
	// Gate is the checkpoint the plan waits at; nil when it waits at none.
	Gate *GateWait
	// ReplicaGatesPassed is the highest N whose checkpoint replicas-N opened
	// in the rollout to UpdateRevision.
	ReplicaGatesPassed int32
}

// GateWait is a checkpoint a rollout waits at.
type GateWait struct {
	Name      string
	Reason    v1alpha1.ConditionReason
	ReachedAt time.Time
	// Analysis is the gate's last measurement.
	Analysis *v1alpha1.AnalysisStatus
}

// GateMeasurement is a measurement the controller took for a gate.
type GateMeasurement struct {
	Gate   string
	Status v1alpha1.AnalysisStatus
}

// SetInput is everything PlanSet reads.
type SetInput struct {
	// Spec is the PodCliqueSet spec after defaulting.
	Spec      *v1alpha1.PodCliqueSetSpec
	Revisions Revisions
	Replicas  []ReplicaObservation
	Previous  Progress
	Now       time.Time
	// Approved is the PodCliqueSet's approval annotation
	// (v1alpha1.AnnotationApprovedRevision); "" for none.
	Approved string
	// Measured is a measurement just taken for the gate the last plan waited
	// at (nil: none); otherwise that gate's last one (Previous.Gate) counts.
	Measured *GateMeasurement
	// Conditions are the PodCliqueSet's status conditions as observed, for
	// gates' required conditions.
	Conditions []metav1.Condition
}

// ChildTarget is the target of one named child of a PCS replica.
type ChildTarget struct {
	Role string
	// Target is nil when the child must be left as it is (and not created).
	Target *Target
}

// ReplicaPlan is the plan for one PCS replica.
type ReplicaPlan struct {
	Index    int32
	Cliques  []ChildTarget // standalone cliques, in spec order
	Groups   []ChildTarget // scaling groups, in spec order
	Updating bool
	RoleStep *RoleStepStatus
}

// Condition is a status condition without its timestamps.
type Condition struct {
	Type    v1alpha1.ConditionType
	Status  string
	Reason  v1alpha1.ConditionReason
	Message string
}

// SetStatus is the PodCliqueSet status the plan implies.
type SetStatus struct {
	Replicas, ReadyReplicas, AvailableReplicas, UpdatedReplicas int32
	CurrentRevision, UpdateRevision                             string
	// Progress is the progress to store for the next plan.
	Progress Progress
	// Units are the updated, ready and available units now, summed over every level.
	Units ProgressCounts
	// Complete is true when every replica at or above the partition runs the
	// update revision, indices are exactly [0, replicas) and all are available.
	Complete         bool
	DeadlineExceeded bool
	// GateRecheckIn is when the gate the plan waits at may open by itself (a
	// soak ending, the next measurement); 0 when none will.
	GateRecheckIn time.Duration
	// Rollback: a gate's analysis failed and its onFailure is Rollback: the
	// PodCliqueSet goes back to CurrentRevision.
	Rollback   bool
	Conditions []Condition
}

// SetPlan is the answer of PlanSet.
type SetPlan struct {
	// Creates and Deletes are PCS replicas (a PCS replica is all its children).
	Creates []Create
	Deletes []Delete
	// Policy is the PCS-replica level policy the creates and deletes come from.
	Policy   Policy
	Replicas []ReplicaPlan // every live or newly created replica, by index
	Status   SetStatus
}
