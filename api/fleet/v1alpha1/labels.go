package v1alpha1

// Labels the hub puts on every PlacementDecision. They are written by the
// Placement controller and read as data by consumers; nothing parses slice names.
const (
	// LabelPlacement names the Placement a PlacementDecision belongs to. Select on
	// it to read every slice of a placement.
	LabelPlacement = "fleet.lockstep.dev/placement"
	// LabelDecisionGroupName is the name of the decision group the slice belongs
	// to: a spec.decisionStrategy.groupStrategy.decisionGroups[].groupName, or ""
	// for clusters no predefined group matched.
	LabelDecisionGroupName = "fleet.lockstep.dev/decision-group-name"
	// LabelDecisionGroupIndex is the index (decimal, from "0") of the decision
	// group the slice belongs to, as in status.decisionGroups[].decisionGroupIndex.
	LabelDecisionGroupIndex = "fleet.lockstep.dev/decision-group-index"
)

// MaxClustersPerDecision is how many clusters one PlacementDecision holds at most,
// at every moment, also while its placement is being updated.
const MaxClustersPerDecision = 100
