package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodCliqueSetSpec is the desired state of a PodCliqueSet.
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || self.updateStrategy.type != 'ReplicaRecreate' || self.template.cliques.all(c, !has(c.updateStrategy))",message="template.cliques[].updateStrategy is not allowed with updateStrategy.type ReplicaRecreate: whole PodCliqueSet replicas are recreated, so per-clique limits would have no effect"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || self.updateStrategy.type != 'ReplicaRecreate' || !has(self.template.podCliqueScalingGroups) || self.template.podCliqueScalingGroups.all(g, !has(g.updateStrategy))",message="template.podCliqueScalingGroups[].updateStrategy is not allowed with updateStrategy.type ReplicaRecreate: whole PodCliqueSet replicas are recreated, so per-group limits would have no effect"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || self.updateStrategy.type != 'OnDelete' || (self.template.cliques.all(c, !has(c.updateStrategy)) && (!has(self.template.podCliqueScalingGroups) || self.template.podCliqueScalingGroups.all(g, !has(g.updateStrategy))))",message="cliques and scaling groups may not set updateStrategy with updateStrategy.type OnDelete: nothing is deleted for an update"
// +kubebuilder:validation:XValidation:rule="!has(self.surgePlacement) || self.surgePlacement != 'ReplacedIndex' || !has(self.podReplacementPolicy) || self.podReplacementPolicy == 'TerminationStarted'",message="needs podReplacementPolicy TerminationStarted: a surge pod runs beside the pod it replaces, two live pods at one index",fieldPath=".surgePlacement"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.maxUnavailable) || type(self.updateStrategy.rollingUpdate.maxUnavailable) == string || !has(self.replicas) || self.replicas == 0 || self.updateStrategy.rollingUpdate.maxUnavailable <= self.replicas",message="updateStrategy.rollingUpdate.maxUnavailable must not exceed replicas"
type PodCliqueSetSpec struct {
	// Replicas is the number of PodCliqueSet replicas; each is a full copy of the
	// template, gang-scheduled together. Changing it scales and never starts a
	// rollout. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// MinReadySeconds is how long a pod must be ready, without any container
	// crashing, before it counts as available. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may go without progress (no
	// change in updated, ready or available counts) before the Progressing
	// condition turns False with reason ProgressDeadlineExceeded. Time spent paused
	// does not count. The rollout keeps going; the condition clears when it moves
	// again. Defaults to 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// Paused stops revision changes everywhere: no unit moves to a new revision
	// while it is true, and spec changes are only recorded. Scaling still works,
	// using the revisions already in place. Setting it back to false resumes the
	// rollout where it stopped.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// RevisionHistoryLimit is how many old revisions (ControllerRevisions) are kept
	// for rollback. Defaults to 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// PodReplacementPolicy says when a replacement pod of a standalone clique may
	// start: TerminationStarted (the default) as soon as the pod it replaces is
	// terminating, as a Deployment does, which keeps a rollout from waiting for
	// pods to go away; TerminationComplete only once it is gone, as a StatefulSet
	// does, for workloads that must never run two pods of one index (a pod's
	// identity is its index: its label, hostname and DNS name, not its object
	// name). Under TerminationComplete a surge pod also holds back the next
	// PodCliqueSet replica and role step until it is gone. Scaling-group and
	// PodCliqueSet replicas follow replicaReplacementPolicy. Changing it starts
	// no rollout.
	// +kubebuilder:default=TerminationStarted
	// +kubebuilder:validation:Enum=TerminationStarted;TerminationComplete
	// +optional
	PodReplacementPolicy PodReplacementPolicy `json:"podReplacementPolicy,omitempty"`

	// ReplicaReplacementPolicy says when a scaling-group replica or a
	// PodCliqueSet replica that is removed (replaced, surge no longer needed,
	// scaled in) stops holding the rollout back. Immediate (the default): once
	// every pod of it is terminating; the next PodCliqueSet replica or role step
	// may then start while those pods shut down. PostTermination: only once
	// every pod of it is gone, as a LeaderWorkerSet's PostTermination group
	// replacement waits, so that what starts next never competes for capacity
	// (GPUs) with what it replaces. Either way an index is refilled only once
	// the old replica's objects are gone, and a surge unit with a live pod
	// always holds back the next replica and step. Changing it starts no
	// rollout.
	// +kubebuilder:default=Immediate
	// +kubebuilder:validation:Enum=Immediate;PostTermination
	// +optional
	ReplicaReplacementPolicy ReplicaReplacementPolicy `json:"replicaReplacementPolicy,omitempty"`

	// SurgePlacement says at which index a surge pod of a standalone clique
	// starts. AboveReplicas (the default): at an index of its own, at or above
	// replicas, removed once the rollout is done, as a LeaderWorkerSet's surge
	// replicas are. ReplacedIndex: at the index of the outdated pod it is made
	// to replace, beside it until it is available, when that pod is deleted, as
	// a Deployment's new pods take over from its old ones: no pod is made only
	// to be removed, and a rollout one pod at a time takes one wave less. An
	// index then runs two live pods for a while, so ReplacedIndex needs
	// podReplacementPolicy TerminationStarted. Changing it starts no rollout.
	// +kubebuilder:default=AboveReplicas
	// +kubebuilder:validation:Enum=AboveReplicas;ReplacedIndex
	// +optional
	SurgePlacement SurgePlacement `json:"surgePlacement,omitempty"`

	// UpdateStrategy says how running replicas move to a new revision.
	// +kubebuilder:default={type: RollingUpdate}
	// +optional
	UpdateStrategy PodCliqueSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// Template describes one PodCliqueSet replica. A change to a pod template, or
	// to replicas or minAvailable of a clique inside a scaling group (the shape of
	// a group replica), is a new revision and is rolled out with the update
	// strategy; other replicas and minAvailable changes scale in place. The
	// composition (the names of cliques, scaling groups and the cliques each group
	// holds) cannot change: create a new PodCliqueSet instead.
	Template PodCliqueSetTemplateSpec `json:"template"`
}

// PodCliqueSetTemplateSpec describes one PodCliqueSet replica: its cliques and the
// scaling groups that bundle some of them into multi-node units.
// +kubebuilder:validation:XValidation:rule="!has(self.podCliqueScalingGroups) || self.podCliqueScalingGroups.all(g, g.cliqueNames.all(n, self.cliques.exists(c, c.name == n)))",message="every name in podCliqueScalingGroups[].cliqueNames must be the name of a clique in cliques"
// +kubebuilder:validation:XValidation:rule="size(self.cliques) == size(oldSelf.cliques) && self.cliques.all(c, oldSelf.cliques.exists(o, o.name == c.name))",message="the cliques of a PodCliqueSet cannot be added, removed or renamed: create a new PodCliqueSet and move traffic to it instead"
// +kubebuilder:validation:XValidation:rule="(has(self.podCliqueScalingGroups) ? size(self.podCliqueScalingGroups) : 0) == (has(oldSelf.podCliqueScalingGroups) ? size(oldSelf.podCliqueScalingGroups) : 0) && (!has(self.podCliqueScalingGroups) || self.podCliqueScalingGroups.all(g, oldSelf.podCliqueScalingGroups.exists(o, o.name == g.name && o.cliqueNames == g.cliqueNames)))",message="the scaling groups of a PodCliqueSet and their cliqueNames cannot be added, removed or changed: create a new PodCliqueSet and move traffic to it instead"
type PodCliqueSetTemplateSpec struct {
	// Cliques are the roles of a replica. A clique named in a scaling group is
	// created once per group replica; every other clique is standalone and created
	// once per PodCliqueSet replica.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Cliques []PodCliqueTemplateSpec `json:"cliques"`

	// PodCliqueScalingGroups bundle cliques (say a leader and its workers) into a
	// unit that is scaled, gang-scheduled and updated as a whole.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	PodCliqueScalingGroups []PodCliqueScalingGroupConfig `json:"podCliqueScalingGroups,omitempty"`
}

// PodCliqueTemplateSpec describes one clique (role) of a PodCliqueSet replica.
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || !has(self.replicas) || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.maxUnavailable) || type(self.updateStrategy.maxUnavailable) == string || self.replicas == 0 || self.updateStrategy.maxUnavailable <= self.replicas",message="updateStrategy.maxUnavailable must not exceed replicas"
type PodCliqueTemplateSpec struct {
	// Name of the clique, unique in the PodCliqueSet (also across scaling groups).
	// A DNS-1123 label; it becomes part of object names and pod hostnames.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Replicas is the number of pods of this clique (per scaling-group replica when
	// the clique is in a group). Defaults to 1; a role always has a pod (scale
	// the PodCliqueSet, or a child through /scale, to run fewer). Left out of the
	// JSON when 0, so that a Go client that leaves it unset gets the default.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// MinAvailable is the gang minimum: the clique is scheduled only when this many
	// pods fit together, and it counts as available only with this many available
	// pods. Defaults to replicas; at most replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// UpdateStrategy bounds how many of this clique's pods are replaced at once.
	// Only for standalone cliques and only with the RollingUpdate type. Defaults to
	// maxUnavailable 1, maxSurge 0.
	// +optional
	UpdateStrategy *ComponentUpdateStrategy `json:"updateStrategy,omitempty"`

	// PeerDNS says whether the clique's pods get names their peers can resolve.
	// Replica (the default): each pod is <podclique>-<index>.<podcliqueset>-<replica>
	// under a headless Service of its PodCliqueSet replica, as a multi-node
	// engine's leader and workers need. None: the pods keep their hostname but
	// get no DNS name; a replica whose cliques all say None gets no Service, so
	// the cluster keeps no endpoints for it. Changing it replaces the clique's
	// pods (a pod's subdomain cannot change), as a template change does.
	// +kubebuilder:default=Replica
	// +kubebuilder:validation:Enum=Replica;None
	// +optional
	PeerDNS PeerDNS `json:"peerDNS,omitempty"`

	// Template is the pod template of the clique's pods.
	Template corev1.PodTemplateSpec `json:"template"`
}

// PodCliqueScalingGroupConfig bundles cliques into a multi-node unit.
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || !has(self.replicas) || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.maxUnavailable) || type(self.updateStrategy.maxUnavailable) == string || self.replicas == 0 || self.updateStrategy.maxUnavailable <= self.replicas",message="updateStrategy.maxUnavailable must not exceed replicas"
type PodCliqueScalingGroupConfig struct {
	// Name of the scaling group, unique in the PodCliqueSet (also across cliques).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// CliqueNames are the cliques that make up one replica of the group. A clique
	// belongs to at most one group.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	CliqueNames []string `json:"cliqueNames"`

	// Replicas is the number of group replicas per PodCliqueSet replica. Defaults
	// to 1, at least 1 (see PodCliqueTemplateSpec.Replicas).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// MinAvailable is how many group replicas form the base gang of a PodCliqueSet
	// replica (scheduled together with the standalone cliques) and must be available
	// for the PodCliqueSet replica to be available. Replicas above it get gangs of
	// their own that wait for the base gang. Defaults to 1; at most replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// UpdateStrategy bounds how many group replicas are replaced at once. Only with
	// the RollingUpdate type. Defaults to maxUnavailable 1, maxSurge 0.
	// +optional
	UpdateStrategy *ComponentUpdateStrategy `json:"updateStrategy,omitempty"`
}

// PodCliqueSetStatus is the observed state of a PodCliqueSet.
type PodCliqueSetStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of PodCliqueSet replicas that exist, surge included.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas counts replicas whose every clique has at least minAvailable
	// ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas counts replicas whose every clique has at least minAvailable
	// available pods (ready for minReadySeconds) and every scaling group at least
	// minAvailable available group replicas.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UpdatedReplicas counts replicas whose every unit runs updateRevision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// CurrentRevision is the revision every replica ran when the last rollout
	// completed.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdateRevision is the revision made from the current spec.template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CollisionCount disambiguates revision names when two templates hash alike.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Selector selects the pods of this PodCliqueSet, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Conditions: Available, Progressing, and GangScheduled when a gang cannot be
	// placed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// UpdateProgress describes the current or last rollout.
	// +optional
	UpdateProgress *PodCliqueSetUpdateProgress `json:"updateProgress,omitempty"`
}

// PodCliqueSetUpdateProgress describes a rollout of a PodCliqueSet.
type PodCliqueSetUpdateProgress struct {
	// UpdateStartedAt is when the rollout to updateRevision began.
	// +optional
	UpdateStartedAt *metav1.Time `json:"updateStartedAt,omitempty"`

	// UpdateEndedAt is when every replica reached updateRevision; unset while the
	// rollout runs. With OnDelete it equals updateStartedAt: the rollout is done as
	// soon as the children carry the new template.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`

	// LastProgressAt is when an updated, ready or available count last rose above
	// its highest so far; the progress deadline is measured from it.
	// +optional
	LastProgressAt *metav1.Time `json:"lastProgressAt,omitempty"`

	// ProgressCounts are the highest updated, ready and available units, summed
	// over every level, seen during this rollout: only a count rising above them
	// is progress and moves lastProgressAt (a pod flapping between ready and not
	// ready is not).
	// +optional
	ProgressCounts *UnitCounts `json:"progressCounts,omitempty"`

	// UpdatingReplicas are the PodCliqueSet replicas being updated now.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	UpdatingReplicas []PodCliqueSetReplicaUpdateProgress `json:"updatingReplicas,omitempty"`

	// Gate is the checkpoint the rollout waits at now; unset when it waits at
	// none.
	// +optional
	Gate *GateStatus `json:"gate,omitempty"`

	// ReplicaGatesPassed is the highest N whose checkpoint replicas-N has
	// opened in this rollout: a replica that turns unavailable and back does
	// not make the rollout wait at it again.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReplicaGatesPassed int32 `json:"replicaGatesPassed,omitempty"`
}

// UnitCounts are unit counts summed over every level of a PodCliqueSet.
type UnitCounts struct {
	Updated   int32 `json:"updated"`
	Ready     int32 `json:"ready"`
	Available int32 `json:"available"`
}

// PodCliqueSetReplicaUpdateProgress is the progress of one PodCliqueSet replica.
type PodCliqueSetReplicaUpdateProgress struct {
	// ReplicaIndex is the index of the PodCliqueSet replica.
	ReplicaIndex int32 `json:"replicaIndex"`

	// UpdateStartedAt is when this replica began to update.
	// +optional
	UpdateStartedAt *metav1.Time `json:"updateStartedAt,omitempty"`

	// Surge is true for a replica created above spec.replicas for the rollout.
	// +optional
	Surge bool `json:"surge,omitempty"`

	// RoleStep is the current roleUpgrade step of this replica, when steps are set.
	// +optional
	RoleStep *RoleStepProgress `json:"roleStep,omitempty"`
}

// RoleStepProgress is where a PodCliqueSet replica is in roleUpgrade.steps.
type RoleStepProgress struct {
	// Index of the current step in roleUpgrade.steps (0-based).
	Index int32 `json:"index"`
	// Role the step updates.
	Role string `json:"role"`
	// Target is updateTo resolved to a number of units.
	Target int32 `json:"target"`
	// UpdatedAndReady is how many units of the role are updated and ready now; the
	// step is satisfied when it reaches target.
	UpdatedAndReady int32 `json:"updatedAndReady"`
}

// PodCliqueSet is a set of identical replicas, each a gang of roles (cliques) and
// multi-node scaling groups, updated with the strategy in spec.updateStrategy.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=pcs,categories=lockstep
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.updateStrategy.type`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodCliqueSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueSetSpec   `json:"spec,omitempty"`
	Status PodCliqueSetStatus `json:"status,omitempty"`
}

// PodCliqueSetList is a list of PodCliqueSets.
// +kubebuilder:object:root=true
type PodCliqueSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueSet `json:"items"`
}
