package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ChildStatus is the status PodCliques and PodCliqueScalingGroups share. A unit
// is a pod of a PodClique or a group replica of a PodCliqueScalingGroup.
type ChildStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of units that exist and are not terminating, surge
	// included.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ScheduledReplicas counts units bound to nodes.
	// +optional
	ScheduledReplicas int32 `json:"scheduledReplicas,omitempty"`
	// ReadyReplicas counts ready units.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts units ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// UpdatedReplicas counts units made from the current template, among indices
	// below replicas (surge units are not counted).
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// UpdatedReadyReplicas counts units made from the current template that are
	// ready; role steps are gated on it.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// CurrentRevision is the template hash every unit had when the last update
	// ended.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the hash of the template in the spec.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Selector selects the pods of this object, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Conditions: Available, Progressing.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// UpdateProgress describes the current or last update of the units.
	// +optional
	UpdateProgress *ChildUpdateProgress `json:"updateProgress,omitempty"`
}

// ChildUpdateProgress is the progress of a child's units towards its template.
type ChildUpdateProgress struct {
	UpdateWindow `json:",inline"`
	// PodsSelectedToUpdate are the pods of a PodClique being replaced now
	// (bounded by maxUnavailable and maxSurge).
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	PodsSelectedToUpdate []string `json:"podsSelectedToUpdate,omitempty"`
	// ReplicaIndicesSelectedToUpdate are the group replicas of a
	// PodCliqueScalingGroup being replaced now.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	ReplicaIndicesSelectedToUpdate []int32 `json:"replicaIndicesSelectedToUpdate,omitempty"`
}

// UpdateWindow is when the current or last update of a child's units started
// and ended.
type UpdateWindow struct {
	// UpdateStartedAt is when the current template was first seen.
	// +optional
	UpdateStartedAt *metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when every unit ran the current template (with OnDelete:
	// when the template was taken over).
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
}
