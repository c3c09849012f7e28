package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Gate is a checkpoint in a rollout: nothing new starts past it until it opens.
// Its checks run in order: first the soak, then the approval.
type Gate struct {
	// SoakSeconds is how long the rollout rests at the checkpoint, from when it
	// reached it, before the gate may open. 0 (the default) is no soak.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	// +optional
	SoakSeconds int32 `json:"soakSeconds,omitempty"`

	// Approval holds the gate until someone approves it: `kubectl lockstep
	// approve` writes the annotation lockstep.dev/approved-revision with the
	// value <updateRevision>@<gate name>. An approval given early (while the
	// gate still soaks) counts once the soak is over.
	// +optional
	Approval bool `json:"approval,omitempty"`
}

// GateStatus is the checkpoint a rollout waits at.
type GateStatus struct {
	// Name names the checkpoint: replicas-N after N PodCliqueSet replicas run
	// the update revision, replica-I-step-K after role step K of replica I.
	Name string `json:"name"`

	// Reason is what the gate waits for: Soaking or AwaitingApproval.
	Reason ConditionReason `json:"reason"`

	// ReachedAt is when the rollout reached the checkpoint; the soak counts
	// from it.
	ReachedAt metav1.Time `json:"reachedAt"`
}
