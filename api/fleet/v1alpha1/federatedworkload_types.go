package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	workloadv1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// LabelFederatedWorkload is on every member object the hub writes for a
// FederatedWorkload; its value is "<namespace>.<name>" of the workload.
const LabelFederatedWorkload = "fleet.lockstep.dev/federatedworkload"

// LabelMemberCluster is on every member object the hub writes: the name of
// the MemberCluster it was written for. Each of the hub's member connections
// watches only the objects labelled with its own MemberCluster, and an object
// labelled for another MemberCluster is not the workload's to write there
// (two MemberClusters that name the same cluster must not fight over one
// object). An object without it (written by an older hub) is labelled at the
// next write.
const LabelMemberCluster = "fleet.lockstep.dev/member-cluster"

// AnnotationTemplateRevision is on every member object the hub writes: the
// revision of the pod template (or PodCliqueSet replica template) the member
// object holds, as status.updateRevision names revisions.
const AnnotationTemplateRevision = "fleet.lockstep.dev/template-revision"

// AnnotationGrant is on every member object the hub writes: the hub's
// decision for that member as of its last write, so that the next round can
// rebuild it from the object alone, whatever the workload's status says. Its
// value is compact JSON, versioned by "v" (internal/fleet/member.Record):
//
//	{"v":1,"rev":"<status.updateRevision>","share":4,"grant":{"started":true,"maxUnavailable":2,"maxSurge":1},"stillActing":{...}}
//
// share is the replicas the member was given; grant the grant written; rev
// the template revision the grant was decided for; stillActing, when present,
// the widest grant the member may still act on until it observes grant (as
// status.clusters[].stillActing). The hub owns it and re-asserts it with the
// rest of its fields; a value that does not parse, or of another version,
// counts as none (the round then falls back to status.clusters).
const AnnotationGrant = "fleet.lockstep.dev/grant"

// AnnotationApplied is on every member object the hub writes: a digest of
// the fields it wrote there last. A round whose object for a member has the
// same digest, and whose every field still holds its value in the member,
// sends that member nothing: a settled workload costs its members reads
// only. Any change (of the hub's decision, the template, or a field someone
// edited in the member) is written as before.
const AnnotationApplied = "fleet.lockstep.dev/applied"

// MaxFederatedClusters bounds status.clusters: a FederatedWorkload is placed
// on at most this many clusters at once.
const MaxFederatedClusters = 1000

// DefaultMemberLostTimeoutSeconds is spec.memberLostTimeoutSeconds when unset.
const DefaultMemberLostTimeoutSeconds = 300

// FederatedWorkloadSpec is a workload split over the clusters a Placement chose,
// rolled out as one.
type FederatedWorkloadSpec struct {
	// PlacementRef names the Placement, in the same namespace, whose clusters run
	// the workload. The clusters are the union of all its PlacementDecisions; a
	// cluster that leaves that union has its replicas moved to the others first,
	// then its member object deleted.
	PlacementRef PlacementReference `json:"placementRef"`

	// Replicas is the global number of units: pods for a Deployment or
	// StatefulSet template, PodCliqueSet replicas for a PodCliqueSet template.
	// They are divided over the placed clusters by division.weights.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// Template is the member object written to every placed cluster: a whole
	// apps/v1 Deployment, apps/v1 StatefulSet or lockstep.dev/v1alpha1
	// PodCliqueSet (apiVersion, kind, optional metadata labels and annotations,
	// spec). Its name and namespace are the FederatedWorkload's. Its replicas and
	// rollout fields (a Deployment's strategy limits and paused, a StatefulSet's
	// or PodCliqueSet's partition, a PodCliqueSet's paused and its
	// updateStrategy.rollingUpdate maxUnavailable and maxSurge, which the hub
	// sets to 1 and 0 on ReplicaRecreate members) belong to the hub and must be
	// left out. A change to its pod template (spec.template) is a new
	// revision, rolled out under rolloutStrategy; other changes apply at once.
	// The kind cannot change.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Template runtime.RawExtension `json:"template"`

	// Division says how replicas are divided over the placed clusters.
	// +optional
	Division Division `json:"division,omitempty"`

	// RolloutStrategy is one budget for the whole fleet: it holds over the sum
	// of all members, not per member.
	// +kubebuilder:default={}
	// +optional
	RolloutStrategy FederatedRolloutStrategy `json:"rolloutStrategy,omitempty"`

	// MemberLostTimeoutSeconds is how long a member may be not Ready before the
	// hub counts its whole share as unavailable. Until then it is charged the
	// grant it last held. Defaults to 300.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemberLostTimeoutSeconds *int32 `json:"memberLostTimeoutSeconds,omitempty"`
}

// PlacementReference names a Placement in the workload's namespace.
type PlacementReference struct {
	// Name of the Placement.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Division divides the global replicas over the placed clusters.
type Division struct {
	// Weights give each cluster its weight: the first entry whose selector
	// matches the MemberCluster's labels. With no weights every cluster weighs
	// 1; with weights, a cluster no entry matches weighs 0 (it holds the member
	// object with 0 replicas). Each cluster gets replicas × weight / total
	// rounded down; the remainder goes one by one to the clusters of non-zero
	// weight earliest in name order.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Weights []ClusterWeight `json:"weights,omitempty"`
}

// ClusterWeight weighs the clusters a selector matches.
type ClusterWeight struct {
	// ClusterSelector selects MemberClusters by label; empty matches all.
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`

	// Weight of each matching cluster.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Weight int32 `json:"weight"`
}

// FederatedRolloutStrategy is the global rollout budget.
type FederatedRolloutStrategy struct {
	// MaxUnavailable is how many units may be unavailable fleet-wide during a
	// rollout: an integer or a percentage of replicas, rounded down. Defaults
	// to 1. Must be at least 1 for StatefulSet and PodCliqueSet templates (their
	// members update a unit by taking it down).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:default=1
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many units may run above replicas fleet-wide: an integer
	// or a percentage of replicas, rounded up. Defaults to 0. Only Deployment
	// members surge. Not both maxUnavailable and maxSurge may be 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:default=0
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Partition is how many units stay on the old revision fleet-wide. Exact for
	// StatefulSet and PodCliqueSet members; a Deployment member moves its whole
	// share or none of it, so with Deployments fewer may move (the Progressing
	// condition says how many stay behind). Lowering it resumes the rollout.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition int32 `json:"partition,omitempty"`

	// Paused stops every member from starting a new replacement; units already
	// being replaced finish. Scaling still happens.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Stages roll the workload out over the Placement's decision groups, one
	// stage after another; unset, every cluster is one stage.
	// +optional
	Stages *RolloutStages `json:"stages,omitempty"`
}

// FederatedWorkloadStatus is the workload fleet-wide and per member.
type FederatedWorkloadStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of units in all members, surge included.
	// +optional
	Replicas int32 `json:"replicas"`

	// UpdatedReplicas counts units on updateRevision in all members.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// AvailableReplicas counts available units in all members.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`

	// UpdateRevision is the revision of spec.template's pod template; member
	// objects carry the revision they hold in the
	// fleet.lockstep.dev/template-revision annotation.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// Clusters are the members, sorted by name: every placed cluster, and a
	// cluster that left the placement until its member object is deleted.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=name
	// +optional
	Clusters []FederatedClusterStatus `json:"clusters,omitempty"`

	// Stages are the stages of the rollout to updateRevision, in order, when
	// spec.rolloutStrategy.stages is set.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Stages []StageStatus `json:"stages,omitempty"`

	// Gate is the stage gate the rollout waits at, if any: its name
	// ("stage-<stage name>"), what it waits for, since when, and its last
	// measurement.
	// +optional
	Gate *workloadv1alpha1.GateStatus `json:"gate,omitempty"`

	// Conditions: Available, Progressing, Paused, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FederatedClusterStatus is one member as the hub last saw it.
type FederatedClusterStatus struct {
	// Name of the MemberCluster.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// DesiredReplicas is the member's share of spec.replicas (0 once the
	// cluster left the placement and its units moved away).
	DesiredReplicas int32 `json:"desiredReplicas"`

	// Replicas, UpdatedReplicas and AvailableReplicas are the member object's
	// last read status (updated: on status.updateRevision).
	// +optional
	Replicas int32 `json:"replicas"`
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`

	// Grant is what the member object was last told.
	// +optional
	Grant MemberGrant `json:"grant"`

	// StillActing is the widest of the grants the member may still act on
	// until its controller observes Grant (each limit at its most), charged
	// against the budget besides Grant: a shrunk grant frees budget only once
	// the member has seen it. Empty when Grant is all it may act on.
	// +optional
	StillActing *MemberGrant `json:"stillActing,omitempty"`

	// Waiting says what the rollout waits for in this member, if anything.
	// It starts with "Conflict:" when the member holds an object of the
	// workload's kind, namespace and name that is not this workload's (no
	// fleet.lockstep.dev/federatedworkload label, or another workload's): the
	// hub neither writes nor deletes it, and counts none of its units.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Waiting string `json:"waiting,omitempty"`
}

// MemberGrant is the share of the global budget one member holds.
type MemberGrant struct {
	// Started: the member holds the new revision (a Deployment member takes its
	// whole share or none; a partitioned member holds it from the start and
	// moves with partition).
	// +optional
	Started bool `json:"started"`
	// MaxUnavailable and MaxSurge are a Deployment member's limits.
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable"`
	// +optional
	MaxSurge int32 `json:"maxSurge"`
	// Partition is how many of a StatefulSet's or PodCliqueSet's units stay on
	// the old revision.
	// +optional
	Partition int32 `json:"partition"`
	// Paused: the member is frozen.
	// +optional
	Paused bool `json:"paused"`
}

// FederatedWorkloadConditionType is the type of a FederatedWorkload condition.
type FederatedWorkloadConditionType string

const (
	// FederatedWorkloadAvailable is True while at least replicas − maxUnavailable
	// units are available fleet-wide.
	FederatedWorkloadAvailable FederatedWorkloadConditionType = "Available"
	// FederatedWorkloadProgressing is True while a rollout or a re-division is
	// under way; its message names what it waits for.
	FederatedWorkloadProgressing FederatedWorkloadConditionType = "Progressing"
	// FederatedWorkloadPaused mirrors spec.rolloutStrategy.paused.
	FederatedWorkloadPaused FederatedWorkloadConditionType = "Paused"
	// FederatedWorkloadReconciling is True while the hub still moves the
	// workload towards its spec by itself (a rollout or a re-division under
	// way, or no cluster placed yet); its reason is Progressing's. Tools that
	// compute kstatus (helm --wait, Flux, Argo CD) wait while it is True.
	FederatedWorkloadReconciling FederatedWorkloadConditionType = "Reconciling"
	// FederatedWorkloadStalled is True when the rollout cannot go on by itself
	// (a member object conflict, or a round that cannot be planned); its
	// reason is Progressing's. kstatus reports such a workload as Failed.
	FederatedWorkloadStalled FederatedWorkloadConditionType = "Stalled"
)

// FederatedWorkloadReason is the machine-readable reason of a
// FederatedWorkload condition.
type FederatedWorkloadReason string

// Reasons of Available.
const (
	// FederatedWorkloadReasonMinimumAvailable: at least replicas −
	// maxUnavailable units are available fleet-wide (True).
	FederatedWorkloadReasonMinimumAvailable FederatedWorkloadReason = "MinimumAvailable"
	// FederatedWorkloadReasonBelowMinimumAvailable: fewer are (False).
	FederatedWorkloadReasonBelowMinimumAvailable FederatedWorkloadReason = "BelowMinimumAvailable"
)

// Reasons of Progressing.
const (
	// FederatedWorkloadReasonRolloutInProgress: a rollout or a re-division is
	// under way (True); the message names what it waits for.
	FederatedWorkloadReasonRolloutInProgress FederatedWorkloadReason = "RolloutInProgress"
	// FederatedWorkloadReasonRolloutComplete: every member runs all it is
	// allowed on the update revision and holds its share (False).
	FederatedWorkloadReasonRolloutComplete FederatedWorkloadReason = "RolloutComplete"
	// FederatedWorkloadReasonRolloutPaused: spec.rolloutStrategy.paused holds
	// the rollout (False; also a reason of Paused, True).
	FederatedWorkloadReasonRolloutPaused FederatedWorkloadReason = "RolloutPaused"
	// FederatedWorkloadReasonMemberObjectConflict: in at least one member an
	// object of the template's kind already holds the workload's namespace and
	// name without the label fleet.lockstep.dev/federatedworkload=<namespace>.<name>.
	// The hub leaves it alone; status.clusters[].waiting says which and why.
	FederatedWorkloadReasonMemberObjectConflict FederatedWorkloadReason = "MemberObjectConflict"
	// FederatedWorkloadReasonMaxFailuresExceeded: more clusters failed their
	// stage's progressDeadline than maxFailures allows; no further stage
	// starts until the template or the stages change (False; Stalled).
	FederatedWorkloadReasonMaxFailuresExceeded FederatedWorkloadReason = "MaxFailuresExceeded"
)

// Reasons of Progressing while a stage gate holds the next stage: the gate's
// own reasons (Soaking, AwaitingConditions, AnalysisRunning,
// AwaitingApproval True; AnalysisFailed False, Stalled), as on a
// PodCliqueSet.

// Reasons of Progressing (False) when no round can be planned; the hub
// changes nothing in any member until they are put right.
const (
	// FederatedWorkloadReasonPlacementNotFound: spec.placementRef names no
	// Placement.
	FederatedWorkloadReasonPlacementNotFound FederatedWorkloadReason = "PlacementNotFound"
	// FederatedWorkloadReasonNoClustersPlaced: the placement's decisions hold
	// no cluster; member objects are kept as they are.
	FederatedWorkloadReasonNoClustersPlaced FederatedWorkloadReason = "NoClustersPlaced"
	// FederatedWorkloadReasonTooManyClusters: the placement holds more than
	// MaxFederatedClusters clusters.
	FederatedWorkloadReasonTooManyClusters FederatedWorkloadReason = "TooManyClusters"
	// FederatedWorkloadReasonInvalidTemplate: spec.template is not a member
	// object the hub can write.
	FederatedWorkloadReasonInvalidTemplate FederatedWorkloadReason = "InvalidTemplate"
	// FederatedWorkloadReasonInvalidDivision: spec.division.weights cannot be
	// applied (a selector that does not parse).
	FederatedWorkloadReasonInvalidDivision FederatedWorkloadReason = "InvalidDivision"
	// FederatedWorkloadReasonAlignFailed: the fleet planner refused the
	// strategy (limits it cannot resolve).
	FederatedWorkloadReasonAlignFailed FederatedWorkloadReason = "AlignFailed"
)

// Reasons of Paused (besides FederatedWorkloadReasonRolloutPaused, True).
const (
	// FederatedWorkloadReasonRolloutNotPaused: spec.rolloutStrategy.paused is
	// false (False).
	FederatedWorkloadReasonRolloutNotPaused FederatedWorkloadReason = "RolloutNotPaused"
)

// FederatedWorkload is a Deployment, StatefulSet or PodCliqueSet split over the
// clusters of a Placement and rolled out under one global budget.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fwl,categories=fleet
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.template.kind`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].reason`
// +kubebuilder:printcolumn:name="Waiting",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Progressing")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FederatedWorkload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FederatedWorkloadSpec   `json:"spec,omitempty"`
	Status FederatedWorkloadStatus `json:"status,omitempty"`
}

// FederatedWorkloadList is a list of FederatedWorkloads.
// +kubebuilder:object:root=true
type FederatedWorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedWorkload `json:"items"`
}
