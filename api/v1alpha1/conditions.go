package v1alpha1

// ConditionType names a status condition of a Lockstep object.
type ConditionType string

// Condition types.
const (
	// ConditionAvailable: enough units are available (at least the level's
	// minimum, or replicas - maxUnavailable for a PodCliqueSet).
	ConditionAvailable ConditionType = "Available"
	// ConditionProgressing: where the rollout stands; False only when the
	// progress deadline passed.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionGangScheduled: every replica's base gang is placed, and if not,
	// why, in the scheduler's words (PodCliqueSet, with gang scheduling on).
	ConditionGangScheduled ConditionType = "GangScheduled"
	// ConditionReconciling: True while the operator is still moving the
	// PodCliqueSet towards its spec (a rollout or a scale under way). Tools that
	// compute kstatus (helm --wait, Flux, Argo CD) wait while it is True.
	ConditionReconciling ConditionType = "Reconciling"
	// ConditionStalled: True when the rollout cannot go on by itself (its progress
	// deadline passed); kstatus reports such an object as Failed.
	ConditionStalled ConditionType = "Stalled"
)

// ConditionReason is the machine-readable reason of a condition.
type ConditionReason string

// Reasons of Available.
const (
	// ReasonMinimumReplicasAvailable: at least the minimum of replicas (PodCliqueSet
	// replicas, group replicas) is available.
	ReasonMinimumReplicasAvailable ConditionReason = "MinimumReplicasAvailable"
	// ReasonMinimumReplicasUnavailable: fewer than the minimum are available.
	ReasonMinimumReplicasUnavailable ConditionReason = "MinimumReplicasUnavailable"
	// ReasonMinimumPodsAvailable: a PodClique has at least minAvailable available pods.
	ReasonMinimumPodsAvailable ConditionReason = "MinimumPodsAvailable"
	// ReasonMinimumPodsUnavailable: a PodClique has fewer than minAvailable available pods.
	ReasonMinimumPodsUnavailable ConditionReason = "MinimumPodsUnavailable"
)

// Reasons of Progressing at the PodCliqueSet level.
const (
	// ReasonRolloutComplete: every replica runs the update revision.
	ReasonRolloutComplete ConditionReason = "RolloutComplete"
	// ReasonPartitionReached: every replica at or above the partition runs the
	// update revision; the ones below it wait for the partition to be lowered.
	ReasonPartitionReached ConditionReason = "PartitionReached"
	// ReasonRollingUpdateInProgress: units are being replaced.
	ReasonRollingUpdateInProgress ConditionReason = "RollingUpdateInProgress"
	// ReasonScaling: no revision change under way; replicas are being created or removed.
	ReasonScaling ConditionReason = "Scaling"
	// ReasonRoleStepWaiting: a role step waits for enough updated and ready units.
	ReasonRoleStepWaiting ConditionReason = "RoleStepWaiting"
	// ReasonSurgeUnschedulable: a surge unit of the replica being updated
	// cannot be placed (the scheduler found no room for its pods, or its gang
	// is not admitted). The rollout waits for room for it: it does not fall
	// back to deleting outdated units beyond maxUnavailable. An Event of the
	// same name says so once.
	ReasonSurgeUnschedulable ConditionReason = "SurgeUnschedulable"
	// ReasonSoaking: the rollout rests at a gate's checkpoint for its soakSeconds.
	ReasonSoaking ConditionReason = "Soaking"
	// ReasonAwaitingApproval: the rollout waits at a gate for `kubectl lockstep approve`.
	ReasonAwaitingApproval ConditionReason = "AwaitingApproval"
	// ReasonAwaitingConditions: the rollout waits at a gate for its required
	// conditions.
	ReasonAwaitingConditions ConditionReason = "AwaitingConditions"
	// ReasonAnalysisRunning: the rollout waits at a gate for a passing analysis.
	ReasonAnalysisRunning ConditionReason = "AnalysisRunning"
	// ReasonAnalysisFailed: a gate's analysis failed; with onFailure Pause the
	// rollout holds at the gate until it is approved or the spec changes.
	ReasonAnalysisFailed ConditionReason = "AnalysisFailed"
	// ReasonPaused: spec.paused holds the rollout.
	ReasonPaused ConditionReason = "Paused"
	// ReasonProgressDeadlineExceeded: no progress within progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded ConditionReason = "ProgressDeadlineExceeded"
	// ReasonInvalidSpec: the spec breaks an admission rule (it was written while
	// the webhook was down or bypassed); the operator leaves everything as it is
	// until the spec is fixed.
	ReasonInvalidSpec ConditionReason = "InvalidSpec"
)

// Reasons of Progressing at the PodClique and PodCliqueScalingGroup levels (and
// WaitingForDeletion at every level).
const (
	// ReasonWaitingForDeletion: OnDelete; outdated units update when someone deletes them.
	ReasonWaitingForDeletion ConditionReason = "WaitingForDeletion"
	// ReasonUpdateComplete: every unit runs the template in the spec.
	ReasonUpdateComplete ConditionReason = "UpdateComplete"
	// ReasonUpdating: units are being replaced.
	ReasonUpdating ConditionReason = "Updating"
	// ReasonHeldBackByOwner: the PodCliqueSet caps how many units may update now
	// (a role step, the partition or a pause).
	ReasonHeldBackByOwner ConditionReason = "HeldBackByOwner"
)

// Reasons of GangScheduled at the PodCliqueSet level, as the gang backend
// (internal/gang) reports them. A False condition may instead carry the
// scheduler's own reason (for example SchedulerError).
const (
	// ReasonGangScheduled: at least the gang's minimum of pods is bound.
	ReasonGangScheduled ConditionReason = "Scheduled"
	// ReasonGangUnschedulable: the scheduler tried and the gang does not fit;
	// the message is the scheduler's explanation.
	ReasonGangUnschedulable ConditionReason = "Unschedulable"
	// ReasonGangSchedulingGated: pods of the gang wait for scheduling gates (a
	// scaled gang waits for its base gang this way).
	ReasonGangSchedulingGated ConditionReason = "SchedulingGated"
	// ReasonGangWaitingForPods: fewer pods of the gang exist than its minimum.
	ReasonGangWaitingForPods ConditionReason = "WaitingForPods"
	// ReasonGangPending: every pod exists and the scheduler has not decided yet.
	ReasonGangPending ConditionReason = "Pending"
	// ReasonGangNotFound: the gang's object does not exist (yet).
	ReasonGangNotFound ConditionReason = "GangNotFound"
	// ReasonGangDeleting: the gang's object is being deleted; it goes once no
	// running pod uses it.
	ReasonGangDeleting ConditionReason = "GangDeleting"
	// ReasonGangSchedulingOff: gang scheduling is off (the none backend); pods
	// are scheduled one by one.
	ReasonGangSchedulingOff ConditionReason = "GangSchedulingOff"
)
