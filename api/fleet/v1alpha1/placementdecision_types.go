package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlacementDecisionStatus is one slice of a placement's chosen clusters.
type PlacementDecisionStatus struct {
	// Decisions are the clusters of this slice, sorted by name. While the
	// placement is being updated a cluster may appear in two slices, and a slice
	// may hold clusters that are on their way in or out: a consumer must read the
	// union of all PlacementDecisions labelled fleet.lockstep.dev/placement=<name>
	// and take a cluster as removed only when it is absent from that union.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Decisions []ClusterDecision `json:"decisions,omitempty"`
}

// ClusterDecision is one chosen cluster.
type ClusterDecision struct {
	// ClusterName is the name of the MemberCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterName string `json:"clusterName"`

	// Reason says why the cluster was chosen; empty for now.
	// +optional
	Reason string `json:"reason"`
}

// PlacementDecision is a slice of at most 100 of the clusters a Placement chose.
// The Placement controller creates, updates and deletes it; it is owned by its
// Placement and labelled with the placement and decision group it belongs to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pd,categories=fleet
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.metadata.labels.fleet\.lockstep\.dev/placement`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.metadata.labels.fleet\.lockstep\.dev/decision-group-name`
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.metadata.labels.fleet\.lockstep\.dev/decision-group-index`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status PlacementDecisionStatus `json:"status,omitempty"`
}

// PlacementDecisionList is a list of PlacementDecisions.
// +kubebuilder:object:root=true
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementDecision `json:"items"`
}
