package v1alpha1

import "strconv"

// Labels the operator puts on every object it creates. Indices and revisions are
// written once, at creation, and read back as data; nothing parses object names.
const (
	// LabelManagedBy is the standard app.kubernetes.io/managed-by label.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on Lockstep's objects.
	ManagedByValue = "lockstep"

	// LabelPodCliqueSet names the PodCliqueSet an object belongs to.
	LabelPodCliqueSet = "lockstep.dev/podcliqueset"
	// LabelPodCliqueSetReplicaIndex is the index of the PodCliqueSet replica.
	LabelPodCliqueSetReplicaIndex = "lockstep.dev/podcliqueset-replica-index"
	// LabelClique is the name of the clique in the PodCliqueSet template.
	LabelClique = "lockstep.dev/clique"
	// LabelPodCliqueScalingGroup names the scaling group (template name) of an object in a group.
	LabelPodCliqueScalingGroup = "lockstep.dev/podcliquescalinggroup"
	// LabelPodCliqueScalingGroupReplicaIndex is the index of the scaling-group replica.
	LabelPodCliqueScalingGroupReplicaIndex = "lockstep.dev/podcliquescalinggroup-replica-index"
	// LabelPodClique names the PodClique a pod belongs to.
	LabelPodClique = "lockstep.dev/podclique"
	// LabelSurge marks a unit created above replicas for a rollout ("true").
	LabelSurge = "lockstep.dev/surge"
	// LabelPodIndex is the stable index of a pod inside its PodClique.
	LabelPodIndex = "lockstep.dev/pod-index"
	// LabelPodCliqueSetRevision is the PodCliqueSet revision (ControllerRevision name)
	// the object was made from.
	LabelPodCliqueSetRevision = "lockstep.dev/podcliqueset-revision"
	// LabelTemplateHash is the hash of the pod template (pods) or group template
	// (scaling-group replicas) an object was made from; "updated" means it matches
	// the owner's current template.
	LabelTemplateHash = "lockstep.dev/template-hash"

	// SchedulingGateBaseGang holds the pods of a scaled gang until the base gang of
	// their PodCliqueSet replica is scheduled.
	SchedulingGateBaseGang = "lockstep.dev/base-gang"
)

// AnnotationRollbackTo on a PodCliqueSet asks the operator to roll its pod
// templates back to a kept revision: the value is a ControllerRevision's
// revision number (as `kubectl get controllerrevisions` shows it), its name, or
// "previous" (the newest revision before the one the spec asks for now). The
// operator copies that revision's pod templates into spec.template, removes the
// annotation, and the change rolls out like any other update, under the same
// strategy. Replicas and update strategies are left as they are.
const AnnotationRollbackTo = "lockstep.dev/rollback-to"

// AnnotationApprovedRevision on a PodCliqueSet approves one gate of one
// rollout: its value is <updateRevision>@<gate name> (status.updateProgress.gate
// names the gate waiting). `kubectl lockstep approve` writes it. An approval
// names its revision so that it never opens a gate of a later rollout.
const AnnotationApprovedRevision = "lockstep.dev/approved-revision"

// ApprovalOf is the AnnotationApprovedRevision value that approves gate of the
// rollout to revision.
func ApprovalOf(revision, gate string) string { return revision + "@" + gate }

// AnnotationRestartedAt on a clique's pod template (set by `kubectl lockstep
// restart`) holds when a restart was asked for: changing it changes the
// template, which rolls out like any other update.
const AnnotationRestartedAt = "lockstep.dev/restartedAt"

// RollbackToPrevious is the AnnotationRollbackTo value for the revision before.
const RollbackToPrevious = "previous"

// SetUnitLabels writes into l the labels of a unit made from a template (a pod,
// or a member PodClique of a group replica): managed-by, the template hash, the
// PodCliqueSet revision when known, and the surge marker, removed when the unit
// is not a surge unit.
func SetUnitLabels(l map[string]string, templateHash, setRevision string, surge bool) {
	l[LabelManagedBy] = ManagedByValue
	l[LabelTemplateHash] = templateHash
	if setRevision != "" {
		l[LabelPodCliqueSetRevision] = setRevision
	}
	delete(l, LabelSurge)
	if surge {
		l[LabelSurge] = "true"
	}
}

// IndexLabel reads one of the index labels (LabelPodIndex,
// LabelPodCliqueSetReplicaIndex, LabelPodCliqueScalingGroupReplicaIndex) as
// the operator wrote it at creation; false when it is missing or not a
// non-negative 32-bit number. Every reader of an index goes through it:
// indices are data, never parsed from names.
func IndexLabel(labels map[string]string, key string) (int32, bool) {
	n, err := strconv.ParseInt(labels[key], 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}
