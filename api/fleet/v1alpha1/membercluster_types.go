package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultKubeconfigKey is the Secret key a kubeconfig is read from when
// kubeconfigSecretRef.key is not set.
const DefaultKubeconfigKey = "kubeconfig"

// MemberClusterSpec says how the hub reaches a member cluster.
type MemberClusterSpec struct {
	// KubeconfigSecretRef points at the Secret holding the kubeconfig the hub uses
	// to reach the member. When it changes, or the Secret's content changes, the
	// hub drops its connection to the member and connects again with the new
	// kubeconfig.
	KubeconfigSecretRef KubeconfigSecretReference `json:"kubeconfigSecretRef"`
}

// KubeconfigSecretReference names one key of a Secret on the hub.
type KubeconfigSecretReference struct {
	// Namespace of the Secret. MemberCluster is cluster-scoped, so it must be
	// given.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key of the Secret's data that holds the kubeconfig. Defaults to
	// "kubeconfig".
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// MemberClusterStatus is what the hub last saw of the member.
type MemberClusterStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready. Only Ready members are selected by placements; a member
	// that stops being Ready is removed from its placements' decisions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KubernetesVersion is the member apiserver's version (its /version
	// gitVersion, e.g. v1.36.3), as last read.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// WorkloadKinds are the workload kinds the member serves now and the hub can
	// place there (Deployment, StatefulSet, PodCliqueSet), found by discovery.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	WorkloadKinds []string `json:"workloadKinds,omitempty"`
}

// MemberClusterConditionType is the type of a MemberCluster condition.
type MemberClusterConditionType string

// MemberClusterReady is True while the member's apiserver answers /readyz and
// discovery with the credentials of its kubeconfig.
const MemberClusterReady MemberClusterConditionType = "Ready"

// MemberClusterReason is the machine-readable reason of a MemberCluster
// condition.
type MemberClusterReason string

// Reasons of the Ready condition. Each False reason says which step failed, so a
// fleet admin knows where to look.
const (
	// MemberClusterReasonReachable: the member answered /readyz and discovery (True).
	MemberClusterReasonReachable MemberClusterReason = "Reachable"
	// MemberClusterReasonSecretNotFound: the Secret of kubeconfigSecretRef does
	// not exist.
	MemberClusterReasonSecretNotFound MemberClusterReason = "SecretNotFound"
	// MemberClusterReasonKubeconfigKeyMissing: the Secret has no data under the key.
	MemberClusterReasonKubeconfigKeyMissing MemberClusterReason = "KubeconfigKeyMissing"
	// MemberClusterReasonKubeconfigInvalid: the data under the key is not a
	// usable kubeconfig.
	MemberClusterReasonKubeconfigInvalid MemberClusterReason = "KubeconfigInvalid"
	// MemberClusterReasonKubeconfigRejected: the hub refuses to use the
	// kubeconfig: it would run code or read files on the hub (an exec plugin, an
	// auth provider, a file reference), turn TLS verification off, or its Secret
	// is outside the hub's fleet namespace. The message names the field.
	MemberClusterReasonKubeconfigRejected MemberClusterReason = "KubeconfigRejected"
	// MemberClusterReasonUnreachable: the member's apiserver could not be reached
	// (connection refused, DNS, TLS, timeout).
	MemberClusterReasonUnreachable MemberClusterReason = "Unreachable"
	// MemberClusterReasonUnauthorized: the member rejected the kubeconfig's
	// credentials (401 or 403).
	MemberClusterReasonUnauthorized MemberClusterReason = "Unauthorized"
	// MemberClusterReasonAPIServerNotReady: the member's apiserver answered but
	// /readyz failed.
	MemberClusterReasonAPIServerNotReady MemberClusterReason = "APIServerNotReady"
	// MemberClusterReasonDiscoveryFailed: /readyz passed but discovery did not.
	MemberClusterReasonDiscoveryFailed MemberClusterReason = "DiscoveryFailed"
)

// MemberCluster is a cluster the hub can place work in. It is cluster-scoped; its
// labels (region, gpu, ...) are what placements select on.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mc,categories=fleet
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemberClusterSpec   `json:"spec"`
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterList is a list of MemberClusters.
// +kubebuilder:object:root=true
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberCluster `json:"items"`
}
