package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodCliqueScalingGroupSpec is the desired state of a PodCliqueScalingGroup. The
// operator writes it from the owning PodCliqueSet; users read it, and may scale it
// through /scale.
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas"
type PodCliqueScalingGroupSpec struct {
	// Replicas is the number of group replicas, surge excluded.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// MinAvailable is how many group replicas belong to the base gang and must be
	// available for the group to be available.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// MinReadySeconds is how long a pod must be ready before it counts as
	// available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Revision is the PodCliqueSet revision the clique templates were taken from.
	// +optional
	Revision string `json:"revision,omitempty"`

	// UpdateStrategy says how group replicas move to the templates and how far
	// they may go now.
	// +optional
	UpdateStrategy ChildUpdateStrategy `json:"updateStrategy,omitempty"`

	// Cliques are the templates of the cliques of one group replica.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Cliques []PodCliqueTemplateSpec `json:"cliques"`

	// Gang tells the group which gangs its replicas join; unset without gang
	// scheduling.
	// +optional
	Gang *ScalingGroupGang `json:"gang,omitempty"`
}

// ScalingGroupGang places a scaling group's replicas in gangs: replicas below
// minAvailable join their PodCliqueSet replica's base gang, the others get a gang
// each (named after the group replica) that waits for the base gang.
type ScalingGroupGang struct {
	// BasePodGroupName is the base gang of the PodCliqueSet replica.
	// +kubebuilder:validation:MinLength=1
	BasePodGroupName string `json:"basePodGroupName"`

	// BaseScheduled is set once the base gang is scheduled; until then the gangs
	// of replicas above minAvailable are gated.
	// +optional
	BaseScheduled bool `json:"baseScheduled,omitempty"`
}

// PodCliqueScalingGroupStatus is the observed state of a PodCliqueScalingGroup.
type PodCliqueScalingGroupStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of group replicas that exist, surge included.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ScheduledReplicas counts group replicas whose every clique has minAvailable
	// pods bound to nodes.
	// +optional
	ScheduledReplicas int32 `json:"scheduledReplicas,omitempty"`
	// ReadyReplicas counts group replicas whose every clique has minAvailable ready
	// pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts group replicas whose every clique has minAvailable
	// available pods.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// UpdatedReplicas counts group replicas made from the current templates,
	// among indices below replicas (surge replicas are not counted).
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// UpdatedReadyReplicas counts updated group replicas that are ready; role steps
	// are gated on it.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// CurrentRevision is the template hash all group replicas had when the last
	// update ended.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the hash of spec.cliques.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Selector selects this group's pods, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Conditions: Available, Progressing, GangScheduled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// UpdateProgress describes the current or last update of the group replicas.
	// +optional
	UpdateProgress *PodCliqueScalingGroupUpdateProgress `json:"updateProgress,omitempty"`
}

// PodCliqueScalingGroupUpdateProgress is the progress of a group's replicas towards
// its templates.
type PodCliqueScalingGroupUpdateProgress struct {
	// UpdateStartedAt is when the current templates were first seen.
	// +optional
	UpdateStartedAt *metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when every group replica ran the current templates (with
	// OnDelete: when the templates were taken over).
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// ReplicaIndicesSelectedToUpdate are the group replicas being replaced now.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	ReplicaIndicesSelectedToUpdate []int32 `json:"replicaIndicesSelectedToUpdate,omitempty"`
}

// PodCliqueScalingGroup is one scaling group of one PodCliqueSet replica: a set of
// group replicas, each made of the group's cliques. Created by the operator.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=pcsg,categories=lockstep
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.updateStrategy.type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodCliqueScalingGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueScalingGroupSpec   `json:"spec,omitempty"`
	Status PodCliqueScalingGroupStatus `json:"status,omitempty"`
}

// PodCliqueScalingGroupList is a list of PodCliqueScalingGroups.
// +kubebuilder:object:root=true
type PodCliqueScalingGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueScalingGroup `json:"items"`
}
