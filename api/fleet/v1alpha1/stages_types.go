package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	workloadv1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// StageType is how a rollout's clusters are cut into stages.
// +kubebuilder:validation:Enum=All;Progressive;ProgressivePerGroup
type StageType string

const (
	// StagesAll is one stage of every placed cluster.
	StagesAll StageType = "All"
	// StagesProgressive: the mandatory decision groups, then maxConcurrency
	// clusters at a time, in decision group order.
	StagesProgressive StageType = "Progressive"
	// StagesProgressivePerGroup: the mandatory decision groups, then one
	// decision group at a time, in index order.
	StagesProgressivePerGroup StageType = "ProgressivePerGroup"
)

// RolloutStages rolls a FederatedWorkload out stage by stage over its
// Placement's decision groups. A cluster whose stage has not started keeps
// what it runs and gets none of the global budget; the global
// maxUnavailable, maxSurge and partition hold over all stages at once.
// +kubebuilder:validation:XValidation:rule="!has(self.maxConcurrency) || self.type == 'Progressive'",message="maxConcurrency applies to type Progressive only"
type RolloutStages struct {
	// Type is All (default), Progressive or ProgressivePerGroup.
	// +kubebuilder:default=All
	// +optional
	Type StageType `json:"type,omitempty"`

	// MandatoryDecisionGroups go first, each a stage of its own, in the order
	// given (Progressive and ProgressivePerGroup).
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	MandatoryDecisionGroups []MandatoryDecisionGroup `json:"mandatoryDecisionGroups,omitempty"`

	// MaxConcurrency is how many clusters one stage holds after the mandatory
	// groups (Progressive only): an integer or a percentage of the placed
	// clusters, rounded up. Defaults to all of them.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`

	// MinSuccessTime is how long every cluster of a stage must stay complete
	// before the stage succeeds and the next may start.
	// +optional
	MinSuccessTime metav1.Duration `json:"minSuccessTime,omitempty"`

	// ProgressDeadline is how long a stage's cluster may take to complete,
	// counted from the stage's start; past it the cluster has failed. Zero
	// means no deadline.
	// +optional
	ProgressDeadline metav1.Duration `json:"progressDeadline,omitempty"`

	// MaxFailures is how many clusters may fail (over all stages) before the
	// rollout halts with reason MaxFailuresExceeded: an integer or a
	// percentage of the placed clusters, rounded down. Defaults to 0.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// Gate is a checkpoint after each stage but the last: the next stage
	// starts only once it opens. It is approved on the FederatedWorkload
	// (kubectl lockstep approve fw/NAME); a required condition holds when
	// every member object of the stage (its clusters that did not fail)
	// reports it. onFailure must be Pause: a fleet rolls back by a change of
	// its template.
	// +kubebuilder:validation:XValidation:rule="!has(self.onFailure) || self.onFailure == 'Pause'",message="a stage gate's onFailure must be Pause"
	// +optional
	Gate *workloadv1alpha1.Gate `json:"gate,omitempty"`
}

// MandatoryDecisionGroup names a decision group by name or by index.
// +kubebuilder:validation:XValidation:rule="has(self.groupName) != has(self.groupIndex)",message="set exactly one of groupName and groupIndex"
type MandatoryDecisionGroup struct {
	// GroupName is a decision group's name (its PlacementDecisions' label
	// fleet.lockstep.dev/decision-group-name).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	GroupName string `json:"groupName,omitempty"`
	// GroupIndex is a decision group's index.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GroupIndex *int32 `json:"groupIndex,omitempty"`
}

// StagePhase is where a stage stands.
type StagePhase string

const (
	// StagePending: an earlier stage has not succeeded yet.
	StagePending StagePhase = "Pending"
	// StageProgressing: its clusters roll out.
	StageProgressing StagePhase = "Progressing"
	// StageSoaking: its clusters are complete, for less than minSuccessTime,
	// or its gate soaks.
	StageSoaking StagePhase = "Soaking"
	// StageAwaitingApproval: complete; its gate waits for an approval, its
	// required conditions or its analysis.
	StageAwaitingApproval StagePhase = "AwaitingApproval"
	// StageSucceeded: complete, soaked, its gate open.
	StageSucceeded StagePhase = "Succeeded"
	// StageFailed: more clusters failed than maxFailures allows.
	StageFailed StagePhase = "Failed"
)

// StageStatus is one stage of the current rollout.
type StageStatus struct {
	// Name is the decision group's name and index ("canary-0"), "group-N" for
	// a group without a name, "wave-N" for a Progressive stage, or "all".
	// +kubebuilder:validation:MaxLength=80
	Name string `json:"name"`
	// Clusters are the stage's MemberClusters.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Clusters []string `json:"clusters,omitempty"`
	// Phase is Pending, Progressing, Soaking, AwaitingApproval, Succeeded or
	// Failed.
	Phase StagePhase `json:"phase"`
	// StartedAt is when the stage started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// DeadlineFrom is when progressDeadline counts from: the stage's start,
	// or the last time the rollout was paused (a pause stops the clock; the
	// resume starts it again).
	// +optional
	DeadlineFrom *metav1.Time `json:"deadlineFrom,omitempty"`
	// CompleteSince is when every cluster of it but the failed was last seen
	// complete; minSuccessTime counts from then.
	// +optional
	CompleteSince *metav1.Time `json:"completeSince,omitempty"`
	// CompletedAt is when they had been for minSuccessTime; the gate after
	// the stage counts from then.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// FinishedAt is when it succeeded or failed.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// FailedClusters are its clusters not complete by progressDeadline.
	// +listType=atomic
	// +optional
	FailedClusters []string `json:"failedClusters,omitempty"`
}
