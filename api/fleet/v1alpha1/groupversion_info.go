// Package v1alpha1 is the fleet.lockstep.dev/v1alpha1 API, served only by a hub
// cluster: MemberCluster registers a cluster the hub can reach,
// MemberClusterSet groups member clusters and MemberClusterSetBinding hands a
// set to a namespace, Placement chooses among the clusters of the sets bound to
// its namespace by label, PlacementDecision publishes that choice in slices
// of at most 100 clusters, and FederatedWorkload splits a workload over those
// clusters and rolls it out under one global budget.
//
// +kubebuilder:object:generate=true
// +groupName=fleet.lockstep.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "fleet.lockstep.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&MemberCluster{}, &MemberClusterList{},
		&Placement{}, &PlacementList{},
		&PlacementDecision{}, &PlacementDecisionList{},
		&FederatedWorkload{}, &FederatedWorkloadList{},
		&MemberClusterSet{}, &MemberClusterSetList{},
		&MemberClusterSetBinding{}, &MemberClusterSetBindingList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
