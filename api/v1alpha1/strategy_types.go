package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// UpdateStrategyType says how a PodCliqueSet moves its running units to a new
// revision.
// +kubebuilder:validation:Enum=RollingUpdate;RollingRecreate;ReplicaRecreate;OnDelete
type UpdateStrategyType string

const (
	// RollingUpdateStrategyType updates one PodCliqueSet replica at a time; inside
	// it, standalone cliques replace pods and scaling groups replace group replicas
	// under their own maxUnavailable/maxSurge, or in the order of roleUpgrade.steps.
	// This is the default.
	RollingUpdateStrategyType UpdateStrategyType = "RollingUpdate"
	// RollingRecreateStrategyType is accepted as a synonym of RollingUpdate; the
	// defaulting webhook rewrites it to RollingUpdate.
	RollingRecreateStrategyType UpdateStrategyType = "RollingRecreate"
	// ReplicaRecreateStrategyType deletes whole PodCliqueSet replicas (every clique
	// and scaling group in them) and recreates them on the new revision, so that no
	// replica ever runs two revisions. Use it for incompatible versions.
	ReplicaRecreateStrategyType UpdateStrategyType = "ReplicaRecreate"
	// OnDeleteStrategyType never deletes anything for an update: units pick up the
	// new revision only when they are deleted by someone else and recreated.
	OnDeleteStrategyType UpdateStrategyType = "OnDelete"
)

// PodCliqueSetUpdateStrategy says how a PodCliqueSet rolls to a new revision.
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !(has(self.rollingUpdate.maxUnavailable) || has(self.rollingUpdate.maxSurge)) || self.type == 'ReplicaRecreate'",message="rollingUpdate.maxUnavailable and rollingUpdate.maxSurge are only allowed with type ReplicaRecreate; with RollingUpdate PodCliqueSet replicas update one at a time, and with OnDelete nothing is deleted (set maxUnavailable/maxSurge on cliques or scaling groups instead)"
// +kubebuilder:validation:XValidation:rule="!has(self.roleUpgrade) || self.type == 'RollingUpdate' || self.type == 'RollingRecreate'",message="roleUpgrade is only allowed with type RollingUpdate"
// +kubebuilder:validation:XValidation:rule="!has(self.gate) || self.type != 'OnDelete'",message="gate is not allowed with type OnDelete: nothing is updated in order, so there is no checkpoint to hold"
type PodCliqueSetUpdateStrategy struct {
	// Type is RollingUpdate (the default; RollingRecreate is an accepted synonym),
	// ReplicaRecreate or OnDelete. Changing it takes effect for the next
	// reconciliation, also in the middle of a rollout.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the update of PodCliqueSet replicas.
	// +optional
	RollingUpdate *PodCliqueSetRollingUpdate `json:"rollingUpdate,omitempty"`

	// RoleUpgrade orders the update inside each PodCliqueSet replica by role.
	// Only with type RollingUpdate.
	// +optional
	RoleUpgrade *RoleUpgrade `json:"roleUpgrade,omitempty"`

	// Gate is a checkpoint after each PodCliqueSet replica: once a replica
	// runs the update revision and is available, the next one starts only when
	// the gate opens (checkpoint replicas-N after N updated replicas). There
	// is none before the first replica nor after the last. Not with OnDelete.
	// +optional
	Gate *Gate `json:"gate,omitempty"`
}

// PodCliqueSetRollingUpdate tunes how PodCliqueSet replicas are updated.
type PodCliqueSetRollingUpdate struct {
	// MaxUnavailable is how many PodCliqueSet replicas may be unavailable during a
	// ReplicaRecreate update: an integer, or a percentage of spec.replicas rounded
	// down. Only with type ReplicaRecreate, where it defaults to 1. It may not
	// exceed spec.replicas, and it may be 0 only when maxSurge is not.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="must be a non-negative integer or a percentage between 0% and 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many extra PodCliqueSet replicas may be created above
	// spec.replicas during a ReplicaRecreate update: an integer, or a percentage of
	// spec.replicas rounded up. Surge replicas take indices from spec.replicas
	// upwards and are removed once the replicas below them run the new revision.
	// It may be above 100%, as a Deployment's may. Only with type
	// ReplicaRecreate, where it defaults to 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')",message="must be a non-negative integer or a percentage"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Partition holds PodCliqueSet replicas with an index below it on the revision
	// they run, also when one of their pods is recreated; replicas at or above it
	// are updated. Lower it to continue a staged rollout. Defaults to 0 (update
	// all). A partition of spec.replicas or more updates nothing.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition *int32 `json:"partition,omitempty"`
}

// RoleUpgrade is an ordered plan applied inside every PodCliqueSet replica that is
// being updated.
type RoleUpgrade struct {
	// Steps run in order. A step is satisfied when its role has at least updateTo
	// units that are both updated and ready; the next step starts only then. Roles
	// not named in any step are updated after the last step.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Steps []RoleUpgradeStep `json:"steps"`
}

// RoleUpgradeStep moves one role forward to a cumulative target.
type RoleUpgradeStep struct {
	// Role is the name of a standalone clique or of a scaling group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Role string `json:"role"`

	// UpdateTo is the cumulative number of the role's units (pods of a standalone
	// clique, replicas of a scaling group) that must be updated and ready before
	// the next step starts: an integer from 1 to the role's replicas, or a
	// percentage in (0%, 100%] of the role's replicas, rounded up. It may not
	// decrease between steps of the same role.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9]|[1-9][0-9]|100)%$')",message="must be an integer of at least 1 or a percentage in (0%, 100%]"
	UpdateTo intstr.IntOrString `json:"updateTo"`

	// Gate is a checkpoint after this step inside each replica: once the
	// step is satisfied, the next step (or the roles no step names) starts
	// only when the gate opens (checkpoint replica-I-step-K, K counted from 1).
	// +optional
	Gate *Gate `json:"gate,omitempty"`
}

// ComponentUpdateStrategy bounds how many units of one standalone clique (pods)
// or one scaling group (group replicas) are replaced at once inside a
// PodCliqueSet replica. Only with the RollingUpdate type.
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || !has(self.maxSurge) || !(string(self.maxUnavailable) in ['0', '0%'] && string(self.maxSurge) in ['0', '0%'])",message="maxUnavailable and maxSurge cannot both be 0: nothing could ever be updated"
type ComponentUpdateStrategy struct {
	// MaxUnavailable is how many units may be unavailable during the update: an
	// integer, or a percentage of the component's replicas rounded down. It may not
	// exceed replicas. Defaults to 1.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="must be a non-negative integer or a percentage between 0% and 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many units may be created above replicas during the update:
	// an integer, or a percentage of replicas rounded up. Surge units take indices
	// from replicas upwards and are removed at the end, so the update ends with
	// indices 0..replicas-1. It may be above 100%, as a Deployment's may.
	// Defaults to 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')",message="must be a non-negative integer or a percentage"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// ChildUpdateStrategy is what a PodCliqueSet tells one PodClique or
// PodCliqueScalingGroup about updating its units. The operator writes it.
type ChildUpdateStrategy struct {
	// Type is RollingUpdate (units are replaced under maxUnavailable/maxSurge up to
	// maxUpdated) or OnDelete (units pick up the template only when recreated).
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`

	// MaxUnavailable: see ComponentUpdateStrategy. Defaults to 1.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge: see ComponentUpdateStrategy. Defaults to 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// MaxUpdated caps how many units may run the current template right now. The
	// PodCliqueSet sets it for role steps, partition and pause; unset means all. A
	// unit recreated while the cap is reached comes back on its previous revision.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxUpdated *int32 `json:"maxUpdated,omitempty"`

	// CurrentRevision is the PodCliqueSet revision (ControllerRevision) whose
	// template units are recreated from while they may not update; empty means
	// the child's own spec.revision.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// PodReplacementPolicy is the PodCliqueSet's, for the pods of a standalone
	// PodClique; empty (scaling groups, the cliques inside them) means
	// TerminationComplete.
	// +kubebuilder:validation:Enum=TerminationStarted;TerminationComplete
	// +optional
	PodReplacementPolicy PodReplacementPolicy `json:"podReplacementPolicy,omitempty"`

	// SurgePlacement is the PodCliqueSet's, for the pods of a standalone
	// PodClique; empty means AboveReplicas.
	// +kubebuilder:validation:Enum=AboveReplicas;ReplacedIndex
	// +optional
	SurgePlacement SurgePlacement `json:"surgePlacement,omitempty"`
}

// PodReplacementPolicy says when a pod's replacement may start.
type PodReplacementPolicy string

const (
	// TerminationStarted starts a replacement as soon as its predecessor is
	// terminating, as a Deployment does: for a moment two pods share an index
	// (the new one under another name, with the same index label and hostname).
	// Terminating pods do not count toward replicas + maxSurge.
	TerminationStarted PodReplacementPolicy = "TerminationStarted"
	// TerminationComplete starts a replacement only once its predecessor is
	// gone, as a StatefulSet does: an index never has two pods, and terminating
	// pods count toward replicas + maxSurge.
	TerminationComplete PodReplacementPolicy = "TerminationComplete"
)

// ReplicaReplacementPolicy says when a removed scaling-group or PodCliqueSet
// replica stops holding back what comes next.
type ReplicaReplacementPolicy string

const (
	// Immediate: once every pod of the removed replica is terminating.
	Immediate ReplicaReplacementPolicy = "Immediate"
	// PostTermination: once every pod of the removed replica is gone.
	PostTermination ReplicaReplacementPolicy = "PostTermination"
)

// WaitsForTermination reports whether a removed replica holds back what comes
// next until its pods are gone.
func (p ReplicaReplacementPolicy) WaitsForTermination() bool { return p == PostTermination }

// SurgePlacement says at which index a surge pod starts.
type SurgePlacement string

const (
	// AboveReplicas starts a surge pod at an index of its own, at or above
	// replicas, and removes it once the rollout no longer needs it.
	AboveReplicas SurgePlacement = "AboveReplicas"
	// ReplacedIndex starts a surge pod at the index of the outdated pod it
	// replaces, beside it until it is available; then the outdated pod goes.
	ReplacedIndex SurgePlacement = "ReplacedIndex"
)

// PeerDNS says whether a clique's pods get DNS names their peers can resolve.
type PeerDNS string

const (
	// PeerDNSReplica names each pod under its PodCliqueSet replica's headless
	// Service.
	PeerDNSReplica PeerDNS = "Replica"
	// PeerDNSNone gives the pods no DNS name and the replica no Service for them.
	PeerDNSNone PeerDNS = "None"
)

// Resolvable reports whether pods under d get a DNS name (the empty default
// included).
func (d PeerDNS) Resolvable() bool { return d != PeerDNSNone }

// ReplacesWhileTerminating reports whether a replacement may start while its
// predecessor terminates.
func (p PodReplacementPolicy) ReplacesWhileTerminating() bool { return p == TerminationStarted }
