package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/limit"
)

// Fenceposts are the resolved disruption limits of one level: maxSurge and
// maxUnavailable in units.
type Fenceposts = limit.Budget

// ResolveFenceposts turns maxSurge and maxUnavailable into unit counts against
// replicas by the API's one rule (limit.ResolveBudget): maxSurge rounds up,
// maxUnavailable down, so a percentage never makes a level less safe than the
// user asked, and when both come to zero maxUnavailable is 1.
func ResolveFenceposts(maxSurge, maxUnavailable intstr.IntOrString, replicas int32) (Fenceposts, error) {
	return limit.ResolveBudget(&maxUnavailable, &maxSurge, replicas)
}

// ResolveUpdateTo turns a role step's updateTo into a unit count of a role with
// replicas units. Percentages round up so that any non-zero step moves at least one
// unit and "100%" always means every unit. The count is clamped to [0, replicas].
func ResolveUpdateTo(updateTo intstr.IntOrString, replicas int32) (int32, error) {
	n, err := limit.Resolve(updateTo, replicas, limit.Up)
	if err != nil {
		return 0, fmt.Errorf("resolving updateTo: %w", err)
	}
	return clamp(n, 0, replicas), nil
}

func clamp(v, lo, hi int32) int32 {
	return max(lo, min(v, hi))
}
