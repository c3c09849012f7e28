package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberClusterSetSpec says which MemberClusters belong to the set.
type MemberClusterSetSpec struct {
	// ClusterSelector selects the set's MemberClusters by their labels, Ready or
	// not (placements still choose only Ready members). Unset or empty selects
	// every MemberCluster. Sets may overlap: a cluster can belong to several.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// MemberClusterSetStatus is what the hub last counted of the set.
type MemberClusterSetStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// MemberClusterCount is how many MemberClusters the set's selector matches
	// now, Ready or not.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemberClusterCount int32 `json:"memberClusterCount"`

	// Conditions: SelectorValid.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MemberClusterSetConditionType is the type of a MemberClusterSet condition.
type MemberClusterSetConditionType string

// MemberClusterSetSelectorValid is False when spec.clusterSelector cannot be
// parsed (an unknown operator, a bad label key or value); such a set contains
// no cluster until it is fixed.
const MemberClusterSetSelectorValid MemberClusterSetConditionType = "SelectorValid"

// MemberClusterSetReason is the machine-readable reason of a MemberClusterSet
// condition.
type MemberClusterSetReason string

// Reasons of the SelectorValid condition.
const (
	// MemberClusterSetReasonSelectorValid: spec.clusterSelector parses (True).
	MemberClusterSetReasonSelectorValid MemberClusterSetReason = "SelectorValid"
	// MemberClusterSetReasonInvalidSelector: spec.clusterSelector does not
	// parse; the message says why (False).
	MemberClusterSetReasonInvalidSelector MemberClusterSetReason = "InvalidSelector"
)

// MemberClusterSet is a named group of MemberClusters, chosen by label, that a
// platform team hands to namespaces: a Placement sees only the MemberClusters of
// the sets bound to its own namespace by a MemberClusterSetBinding. It is
// cluster-scoped. A typical fleet has one set per tenant, bound in that tenant's
// namespaces.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mcs,categories=fleet
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.memberClusterCount`
// +kubebuilder:printcolumn:name="Valid",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="SelectorValid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	// +optional
	Spec   MemberClusterSetSpec   `json:"spec,omitempty"`
	Status MemberClusterSetStatus `json:"status,omitempty"`
}

// MemberClusterSetList is a list of MemberClusterSets.
// +kubebuilder:object:root=true
type MemberClusterSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberClusterSet `json:"items"`
}

// MemberClusterSetBindingSpec names the MemberClusterSet bound to the
// binding's namespace.
type MemberClusterSetBindingSpec struct {
	// ClusterSet is the name of the MemberClusterSet whose clusters the
	// Placements of this namespace may select. It must equal the binding's own
	// metadata.name, so a namespace binds a set at most once.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterSet string `json:"clusterSet"`
}

// MemberClusterSetBindingStatus says whether the bound set exists.
type MemberClusterSetBindingStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Bound.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MemberClusterSetBindingConditionType is the type of a
// MemberClusterSetBinding condition.
type MemberClusterSetBindingConditionType string

// MemberClusterSetBindingBound is True while the MemberClusterSet named by
// spec.clusterSet exists. A binding to a set that does not exist (yet)
// contributes no cluster to the namespace's Placements.
const MemberClusterSetBindingBound MemberClusterSetBindingConditionType = "Bound"

// MemberClusterSetBindingReason is the machine-readable reason of a
// MemberClusterSetBinding condition.
type MemberClusterSetBindingReason string

// Reasons of the Bound condition.
const (
	// MemberClusterSetBindingReasonBound: the set exists; the namespace's
	// Placements may select its clusters (True).
	MemberClusterSetBindingReasonBound MemberClusterSetBindingReason = "ClusterSetBound"
	// MemberClusterSetBindingReasonSetNotFound: no MemberClusterSet of that name
	// exists, or it is being deleted (False).
	MemberClusterSetBindingReasonSetNotFound MemberClusterSetBindingReason = "ClusterSetNotFound"
)

// MemberClusterSetBinding lets the Placements of its namespace select the
// MemberClusters of one MemberClusterSet. It is named after the set it binds
// (spec.clusterSet repeats the name). Who may create bindings in a namespace
// is who may hand that namespace clusters: grant create on
// memberclustersetbindings only to the platform team.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcsb,categories=fleet
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.clusterSet",message="spec.clusterSet must equal metadata.name: a binding is named after the MemberClusterSet it binds",fieldPath=".spec.clusterSet"
// +kubebuilder:printcolumn:name="Set",type=string,JSONPath=`.spec.clusterSet`
// +kubebuilder:printcolumn:name="Bound",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Bound")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberClusterSetBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemberClusterSetBindingSpec   `json:"spec"`
	Status MemberClusterSetBindingStatus `json:"status,omitempty"`
}

// MemberClusterSetBindingList is a list of MemberClusterSetBindings.
// +kubebuilder:object:root=true
type MemberClusterSetBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberClusterSetBinding `json:"items"`
}
