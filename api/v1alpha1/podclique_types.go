package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodCliqueSpec is the desired state of a PodClique. The operator writes it from
// the owning PodCliqueSet (or scaling group); users read it, and may scale it
// through /scale.
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas"
type PodCliqueSpec struct {
	// Replicas is the number of pods, surge excluded.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// MinAvailable is the gang minimum and the availability floor.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// MinReadySeconds is how long a pod must be ready before it counts as
	// available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Revision is the PodCliqueSet revision the template was taken from; new pods
	// carry it in the lockstep.dev/podcliqueset-revision label.
	// +optional
	Revision string `json:"revision,omitempty"`

	// UpdateStrategy says how pods move to the template and how far they may go now.
	// +optional
	UpdateStrategy ChildUpdateStrategy `json:"updateStrategy,omitempty"`

	// Template is the pod template pods are updated to.
	Template corev1.PodTemplateSpec `json:"template"`

	// PeerDNS is the clique's peerDNS at Revision: with None, pods get no
	// subdomain. Empty means Replica.
	// +kubebuilder:validation:Enum=Replica;None
	// +optional
	PeerDNS PeerDNS `json:"peerDNS,omitempty"`

	// Gang is the gang the pods join; unset without gang scheduling.
	// +optional
	Gang *PodCliqueGang `json:"gang,omitempty"`
}

// PodCliqueGang places a PodClique's pods in a gang.
type PodCliqueGang struct {
	// PodGroupName is the scheduling.k8s.io PodGroup the pods join (through
	// spec.schedulingGroup), or the gang's name in another scheduler's backend.
	// +kubebuilder:validation:MinLength=1
	PodGroupName string `json:"podGroupName"`

	// Gated holds the pods back (with the lockstep.dev/base-gang scheduling gate)
	// until the owner clears it: the gangs of scaling-group replicas above
	// minAvailable wait until their PodCliqueSet replica's base gang is scheduled.
	// +optional
	Gated bool `json:"gated,omitempty"`
}

// PodClique is one role of one PodCliqueSet replica (or of one scaling-group
// replica): a set of pods with stable indices and hostnames. Created by the operator.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=pclq,categories=lockstep
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.updateStrategy.type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodClique struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodCliqueSpec `json:"spec,omitempty"`
	// Status: the units are pods.
	Status ChildStatus `json:"status,omitempty"`
}

// PodCliqueList is a list of PodCliques.
// +kubebuilder:object:root=true
type PodCliqueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodClique `json:"items"`
}

// UnitStatus is the status of the PodClique's units (pods).
func (o *PodClique) UnitStatus() *ChildStatus { return &o.Status }
