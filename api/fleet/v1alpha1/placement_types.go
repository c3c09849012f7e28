package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PlacementSpec says which member clusters to choose and how to publish the
// choice.
type PlacementSpec struct {
	// ClusterSets narrows the placement to these MemberClusterSets. Each must be
	// bound to the placement's namespace by a MemberClusterSetBinding; a name
	// that is not bound adds no cluster, and the ClusterSetsBound condition
	// says which. Unset or empty: every set bound to the namespace. A placement
	// never sees a MemberCluster outside the sets bound to its namespace.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	ClusterSets []string `json:"clusterSets,omitempty"`

	// ClusterSelector selects, among the MemberClusters of the placement's
	// cluster sets (see clusterSets), those whose labels match. Only members
	// whose Ready condition is True are selected. Unset or empty selects every
	// Ready member of those sets. When it changes, or a member's labels or
	// readiness change, or a set or binding changes, the decisions are updated
	// with spec.decisionStrategy.updateStrategy.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// DecisionStrategy says how the selected clusters are divided into decision
	// groups and how the PlacementDecisions are updated.
	// +kubebuilder:default={}
	// +optional
	DecisionStrategy DecisionStrategy `json:"decisionStrategy,omitempty"`
}

// DecisionStrategy divides the selected clusters into decision groups and says how
// the PlacementDecisions move from one set of clusters to the next.
type DecisionStrategy struct {
	// GroupStrategy divides the selected clusters into decision groups.
	// +kubebuilder:default={}
	// +optional
	GroupStrategy GroupStrategy `json:"groupStrategy,omitempty"`

	// UpdateStrategy says how PlacementDecisions are rewritten when the selected
	// clusters or their grouping change. It governs only the decision objects,
	// not how workloads roll out to the clusters.
	// +kubebuilder:default={type: RollingUpdate}
	// +optional
	UpdateStrategy DecisionUpdateStrategy `json:"updateStrategy,omitempty"`
}

// GroupStrategy divides the selected clusters into decision groups. Clusters are
// first assigned to the predefined groups in decisionGroups, in the order given
// (a cluster joins the first group whose selector matches it); the clusters no
// group matched form one more group, named "". Inside a group clusters are
// sorted by name in plain string order, and the group is cut into chunks of
// clustersPerDecisionGroup clusters: each chunk is a decision group of its own,
// with an index counting from 0 over all groups. Each decision group is published
// in PlacementDecisions of at most 100 clusters.
type GroupStrategy struct {
	// DecisionGroups are the predefined groups, in order. Clusters no group
	// matches go to a last group named "".
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=groupName
	// +optional
	DecisionGroups []DecisionGroup `json:"decisionGroups,omitempty"`

	// ClustersPerDecisionGroup is the most clusters in one decision group: an
	// integer of at least 1, or a percentage in (0%, 100%] of all selected
	// clusters (not of the group), rounded up. A group with more clusters is cut
	// into several decision groups of that size, the last one smaller. Defaults
	// to "100%" (every group is one decision group). Changing it re-groups the
	// clusters; under RollingUpdate no cluster leaves the decisions meanwhile.
	// +kubebuilder:default="100%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9]|[1-9][0-9]|100)%$')",message="must be an integer of at least 1 or a percentage in (0%, 100%]"
	// +optional
	ClustersPerDecisionGroup *intstr.IntOrString `json:"clustersPerDecisionGroup,omitempty"`
}

// DecisionGroup is a predefined group of clusters.
type DecisionGroup struct {
	// GroupName names the group; it is the fleet.lockstep.dev/decision-group-name
	// label of the group's PlacementDecisions, so it must be a valid label value.
	// Names are unique within a placement.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	GroupName string `json:"groupName"`

	// GroupClusterSelector selects, among the placement's selected clusters, those
	// of this group. A cluster matched by several groups joins the first of them.
	// An empty selector matches every cluster not taken by an earlier group.
	GroupClusterSelector *metav1.LabelSelector `json:"groupClusterSelector"`
}

// DecisionUpdateType says how the PlacementDecisions of a placement move from one
// set of clusters to the next.
// +kubebuilder:validation:Enum=RollingUpdate;All
type DecisionUpdateType string

const (
	// RollingUpdateDecisionUpdate first writes every PlacementDecision as the union
	// of its old and new clusters (what does not fit in 100 goes to extra
	// PlacementDecisions of the same group), then, once every cluster is in its
	// final PlacementDecision, trims each to its final set and deletes the extra
	// and obsolete ones. A cluster placed before and after the update is in at
	// least one PlacementDecision of the placement at every moment. The default.
	RollingUpdateDecisionUpdate DecisionUpdateType = "RollingUpdate"
	// AllDecisionUpdate writes every PlacementDecision to its final set at once,
	// one after the other. A cluster that moves between PlacementDecisions can be
	// absent from all of them for a moment, which a consumer may take for a
	// removal.
	AllDecisionUpdate DecisionUpdateType = "All"
)

// DecisionUpdateStrategy says how PlacementDecisions are updated.
type DecisionUpdateStrategy struct {
	// Type is RollingUpdate (the default) or All. A change takes effect at the
	// next update of the decisions, also in the middle of one.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type DecisionUpdateType `json:"type,omitempty"`
}

// PlacementStatus is the placement's current choice of clusters.
type PlacementStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// NumberOfSelectedClusters is how many Ready member clusters the placement
	// selects now.
	// +optional
	NumberOfSelectedClusters int32 `json:"numberOfSelectedClusters"`

	// NumberOfDecisionGroups is the length of decisionGroups.
	// +optional
	NumberOfDecisionGroups int32 `json:"numberOfDecisionGroups"`

	// DecisionGroups are the decision groups of the current choice, in index
	// order: the final layout the PlacementDecisions are moving to (or hold, when
	// DecisionsSettled is True).
	// +listType=atomic
	// +optional
	DecisionGroups []DecisionGroupStatus `json:"decisionGroups,omitempty"`

	// Conditions: ClusterSetsBound, DecisionsSettled, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DecisionGroupStatus is one decision group of a placement.
type DecisionGroupStatus struct {
	// DecisionGroupIndex is the group's index, counting from 0 over all groups;
	// it is the fleet.lockstep.dev/decision-group-index label of its
	// PlacementDecisions.
	DecisionGroupIndex int32 `json:"decisionGroupIndex"`

	// DecisionGroupName is the predefined group the decision group was cut from,
	// or "" for clusters no predefined group matched.
	// +optional
	DecisionGroupName string `json:"decisionGroupName"`

	// Decisions are the names of the PlacementDecisions that hold this group's
	// clusters once the decisions are settled.
	// +listType=atomic
	// +optional
	Decisions []string `json:"decisions,omitempty"`

	// ClusterCount is the number of clusters in the group.
	ClusterCount int32 `json:"clusterCount"`
}

// PlacementConditionType is the type of a Placement condition.
type PlacementConditionType string

// PlacementDecisionsSettled is True when every PlacementDecision of the placement
// holds exactly its final set of clusters and no extra or obsolete
// PlacementDecision is left.
const PlacementDecisionsSettled PlacementConditionType = "DecisionsSettled"

// PlacementReason is the machine-readable reason of a Placement condition.
type PlacementReason string

// Reasons of the DecisionsSettled condition.
const (
	// PlacementReasonSettled: the PlacementDecisions hold the final layout (True).
	PlacementReasonSettled PlacementReason = "Settled"
	// PlacementReasonSurging: a RollingUpdate is under way; PlacementDecisions
	// may hold more clusters than their final set (the union of old and new)
	// until the update is finalized.
	PlacementReasonSurging PlacementReason = "Surging"
	// PlacementReasonUpdating: an All update is under way; the
	// PlacementDecisions are being rewritten to their final sets.
	PlacementReasonUpdating PlacementReason = "Updating"
)

// PlacementClusterSetsBound is True when every cluster set the placement draws
// from is bound to its namespace and exists: at least one set is bound, each
// name in spec.clusterSets is bound, and each binding it uses names a
// MemberClusterSet that exists. When False the placement still selects from
// the sets that are bound and exist (possibly none); the message names what is
// missing.
const PlacementClusterSetsBound PlacementConditionType = "ClusterSetsBound"

// Reasons of the ClusterSetsBound condition.
const (
	// PlacementReasonClusterSetsBound: every set the placement uses is bound
	// and exists (True).
	PlacementReasonClusterSetsBound PlacementReason = "ClusterSetsBound"
	// PlacementReasonClusterSetUnbound: no set is bound to the namespace, a set
	// named in spec.clusterSets is not bound to it, or a binding names a set
	// that does not exist (False).
	PlacementReasonClusterSetUnbound PlacementReason = "ClusterSetUnbound"
)

// PlacementReconciling is True while the PlacementDecisions move to the final
// layout (DecisionsSettled False, with its reason). Tools that compute kstatus
// (helm --wait, Flux, Argo CD) wait while it is True.
const PlacementReconciling PlacementConditionType = "Reconciling"

// PlacementStalled is True when the placement cannot reach its spec by itself:
// its cluster sets are not all bound (reason ClusterSetUnbound), or its
// spec.clusterSelector or group strategy is invalid. kstatus reports such a
// placement as Failed. When False its reason is ClusterSetsBound.
const PlacementStalled PlacementConditionType = "Stalled"

// Reasons of the Stalled condition (besides ClusterSetUnbound and
// ClusterSetsBound).
const (
	// PlacementReasonInvalidClusterSelector: spec.clusterSelector does not
	// parse; nothing is selected or written until it is fixed.
	PlacementReasonInvalidClusterSelector PlacementReason = "InvalidClusterSelector"
	// PlacementReasonInvalidGroupStrategy: the selected clusters cannot be
	// grouped as spec.decisionStrategy.groupStrategy asks; nothing is written
	// until it is fixed.
	PlacementReasonInvalidGroupStrategy PlacementReason = "InvalidGroupStrategy"
)

// Placement chooses member clusters by label, among the MemberClusterSets bound
// to its namespace, and publishes the choice in PlacementDecisions named
// <placement>-decision-<N>, N counting from 1.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=plc,categories=fleet
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.numberOfSelectedClusters`
// +kubebuilder:printcolumn:name="Groups",type=integer,JSONPath=`.status.numberOfDecisionGroups`
// +kubebuilder:printcolumn:name="Settled",type=string,JSONPath=`.status.conditions[?(@.type=="DecisionsSettled")].status`
// +kubebuilder:printcolumn:name="Sets Bound",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="ClusterSetsBound")].status`
// +kubebuilder:printcolumn:name="Strategy",type=string,priority=1,JSONPath=`.spec.decisionStrategy.updateStrategy.type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Placement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PlacementSpec   `json:"spec,omitempty"`
	Status PlacementStatus `json:"status,omitempty"`
}

// PlacementList is a list of Placements.
// +kubebuilder:object:root=true
type PlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Placement `json:"items"`
}
