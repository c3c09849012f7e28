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

	Spec PodCliqueScalingGroupSpec `json:"spec,omitempty"`
	// Status: the units are group replicas; a group replica counts as
	// scheduled, ready or available when every member clique has minAvailable
	// pods that are.
	Status ChildStatus `json:"status,omitempty"`
}

// PodCliqueScalingGroupList is a list of PodCliqueScalingGroups.
// +kubebuilder:object:root=true
type PodCliqueScalingGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueScalingGroup `json:"items"`
}

// UnitStatus is the status of the PodCliqueScalingGroup's units (group replicas).
func (o *PodCliqueScalingGroup) UnitStatus() *ChildStatus { return &o.Status }
