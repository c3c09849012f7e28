// Package v1alpha1 is the lockstep.dev/v1alpha1 API: PodCliqueSet, the object users
// write, and PodCliqueScalingGroup and PodClique, which the operator creates from it.
//
// +kubebuilder:object:generate=true
// +groupName=lockstep.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "lockstep.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&PodCliqueSet{}, &PodCliqueSetList{},
		&PodCliqueScalingGroup{}, &PodCliqueScalingGroupList{},
		&PodClique{}, &PodCliqueList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
