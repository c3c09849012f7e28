package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Fenceposts are the resolved disruption limits of one level.
type Fenceposts struct {
	// MaxSurge is how many units may exist above Replicas.
	MaxSurge int32
	// MaxUnavailable is how many of Replicas may be unavailable.
	MaxUnavailable int32
}

// ResolveFenceposts turns maxSurge and maxUnavailable into unit counts against
// replicas. Percentages of maxSurge round up and of maxUnavailable round down, so a
// percentage never makes a level less safe than the user asked. When both resolve to
// zero, maxUnavailable becomes 1 as Deployment does: a rollout must be able to move.
func ResolveFenceposts(maxSurge, maxUnavailable intstr.IntOrString, replicas int32) (Fenceposts, error) {
	surge, err := intstr.GetScaledValueFromIntOrPercent(&maxSurge, int(replicas), true)
	if err != nil {
		return Fenceposts{}, fmt.Errorf("resolving maxSurge %q: %w", maxSurge.String(), err)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, int(replicas), false)
	if err != nil {
		return Fenceposts{}, fmt.Errorf("resolving maxUnavailable %q: %w", maxUnavailable.String(), err)
	}
	if surge < 0 || unavailable < 0 {
		return Fenceposts{}, fmt.Errorf("maxSurge %q and maxUnavailable %q must not be negative", maxSurge.String(), maxUnavailable.String())
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return Fenceposts{MaxSurge: int32(surge), MaxUnavailable: int32(unavailable)}, nil
}

// ResolveUpdateTo turns a role step's updateTo into a unit count of a role with
// replicas units. Percentages round up so that any non-zero step moves at least one
// unit and "100%" always means every unit. The count is clamped to [0, replicas].
func ResolveUpdateTo(updateTo intstr.IntOrString, replicas int32) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&updateTo, int(replicas), true)
	if err != nil {
		return 0, fmt.Errorf("resolving updateTo %q: %w", updateTo.String(), err)
	}
	return clamp(int32(n), 0, replicas), nil
}

func clamp(v, lo, hi int32) int32 {
	return max(lo, min(v, hi))
}
