package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Gate is a checkpoint in a rollout: nothing new starts past it until it opens.
// Its checks run in order: the soak, the required conditions, the analysis,
// the approval.
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

	// RequiredConditions must all hold on the PodCliqueSet's own status
	// conditions once the soak is over: its Available or GangScheduled, or a
	// condition another controller writes there (the operator keeps
	// conditions it does not own).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	RequiredConditions []RequiredCondition `json:"requiredConditions,omitempty"`

	// Analysis measures the new revision once the soak is over: the gate
	// opens only on a passing measurement taken after the checkpoint was
	// reached. A failing one applies onFailure; a query that cannot be
	// answered (an error, an empty result) holds the gate and never counts
	// as a failure.
	// +optional
	Analysis *GateAnalysis `json:"analysis,omitempty"`

	// OnFailure is what a failed analysis does: Pause (the default) holds
	// the rollout at the gate until the gate is approved (an approval
	// overrides the failure) or the spec changes; Rollback also rolls the
	// PodCliqueSet back to the revision it rolls from, as the annotation
	// lockstep.dev/rollback-to: previous does.
	// +kubebuilder:validation:Enum=Pause;Rollback
	// +optional
	OnFailure GateFailurePolicy `json:"onFailure,omitempty"`
}

// GateFailurePolicy is what a failed analysis does.
type GateFailurePolicy string

const (
	// GateFailurePause holds the rollout at the gate.
	GateFailurePause GateFailurePolicy = "Pause"
	// GateFailureRollback rolls the workload back to the revision it rolls from.
	GateFailureRollback GateFailurePolicy = "Rollback"
)

// RequiredCondition is a condition type and the status it must have.
type RequiredCondition struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`
}

// GateAnalysis is a measurement of a rollout's health: a Prometheus query or
// a webhook, exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.prometheus) != has(self.webhook)",message="exactly one of prometheus and webhook"
type GateAnalysis struct {
	// Prometheus runs an instant query and compares its result.
	// +optional
	Prometheus *PrometheusAnalysis `json:"prometheus,omitempty"`

	// Webhook asks an HTTP endpoint.
	// +optional
	Webhook *WebhookAnalysis `json:"webhook,omitempty"`

	// IntervalSeconds is how often the query runs while the gate waits for a
	// passing measurement. Defaults to 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`
}

// WebhookAnalysis asks an HTTP endpoint for a verdict: the operator POSTs
// the rollout's state as JSON (kind, namespace, name, gate, revision and the
// replica counts) and reads {"result": "pass" | "fail" | "inconclusive",
// "message": "..."} from a 2xx answer. Anything else is inconclusive.
type WebhookAnalysis struct {
	// URL is the endpoint (http or https). The operator calls only URLs
	// under one of its --analysis-webhook-url-prefix flags.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
}

// PrometheusAnalysis is one PromQL instant query and the condition its result
// must meet.
type PrometheusAnalysis struct {
	// Address is the Prometheus server's base URL (http or https). The
	// operator queries only the addresses its --analysis-prometheus-address
	// flags allow; any other holds the gate and says so.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Address string `json:"address"`

	// Query is a PromQL instant query.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`

	// SuccessCondition compares the result with a number: "result < 0.01",
	// "result[1] >= 3". result is the first sample (a scalar, or the first
	// series of a vector ordered by its labels), result[N] the N-th (from
	// 0); the operators are <, <=, >, >=, == and !=. A comparison, not an
	// expression language: nothing else is accepted.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	SuccessCondition string `json:"successCondition"`
}

// GateStatus is the checkpoint a rollout waits at.
type GateStatus struct {
	// Name names the checkpoint: replicas-N after N PodCliqueSet replicas run
	// the update revision, replica-I-step-K after role step K of replica I.
	Name string `json:"name"`

	// Reason is what the gate waits for (Soaking, AnalysisRunning,
	// AwaitingApproval) or AnalysisFailed.
	Reason ConditionReason `json:"reason"`

	// ReachedAt is when the rollout reached the checkpoint; the soak counts
	// from it.
	ReachedAt metav1.Time `json:"reachedAt"`

	// Analysis is the gate's last measurement, when it has an analysis.
	// +optional
	Analysis *AnalysisStatus `json:"analysis,omitempty"`
}

// AnalysisPhase is the outcome of one measurement.
type AnalysisPhase string

const (
	// AnalysisPassed: the result met the success condition.
	AnalysisPassed AnalysisPhase = "Passed"
	// AnalysisFailed: the result did not meet it.
	AnalysisFailed AnalysisPhase = "Failed"
	// AnalysisInconclusive: there was no result to compare (an error, an
	// address not allowed, no such sample); the gate holds and measures again.
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
)

// AnalysisStatus is one measurement of a gate's analysis.
type AnalysisStatus struct {
	Phase AnalysisPhase `json:"phase"`
	// Value is the compared sample, as Prometheus gave it.
	// +optional
	Value string `json:"value,omitempty"`
	// Message says what was compared, or why nothing was.
	// +optional
	Message string `json:"message,omitempty"`
	// MeasuredAt is when the query ran.
	MeasuredAt metav1.Time `json:"measuredAt"`
}
