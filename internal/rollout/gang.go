package rollout

// Gang says which gang a scaling-group replica joins (DESIGN.md, "Gang scheduling").
type Gang string

const (
	// BaseGang holds the standalone cliques and the group replicas below the
	// group's minAvailable: the part of a PCS replica that must start together.
	BaseGang Gang = "base"
	// ScaledGang is a gang of its own for one group replica at or above
	// minAvailable, gated until the base gang is scheduled.
	ScaledGang Gang = "scaled"
)

// GroupReplicaGang is the gang of scaling-group replica index. Surge replicas sit at
// indices >= replicas >= minAvailable, so they always get a scaled gang.
func GroupReplicaGang(index, minAvailable int32) Gang {
	if index < minAvailable {
		return BaseGang
	}
	return ScaledGang
}
