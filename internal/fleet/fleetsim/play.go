package fleetsim

import (
	"fmt"
	"strconv"
	"strings"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// Step is one applied write and the state a watcher sees after it.
type Step struct {
	// Plan counts the plans from 1.
	Plan  int
	Phase fleet.Phase
	Write fleet.Write
	State []fleet.Slice
}

// MaxPlans bounds Play: an update settles in at most two plans applied in full,
// and a third read finds nothing to do.
const MaxPlans = 3

// Play plans and applies every write of every plan until the slices settle, as a
// controller that never crashes would, and returns each step.
func Play(s *Store, desired fleet.Layout, update fleetv1alpha1.DecisionUpdateType) ([]Step, error) {
	var steps []Step
	stay := Selected(desired)
	for n := 1; n <= MaxPlans; n++ {
		p := fleet.PlanDecisions(s.Slices(), desired, update)
		if p.Phase == fleet.PhaseSettled {
			return steps, nil
		}
		for _, w := range p.Writes {
			if err := s.Apply(w, stay); err != nil {
				return steps, err
			}
			steps = append(steps, Step{Plan: n, Phase: p.Phase, Write: w, State: s.Slices()})
		}
	}
	return steps, fmt.Errorf("not settled after %d plans", MaxPlans)
}

// Render draws slices one a line: name, group name and index, size, and the
// clusters with runs of consecutive numbered names folded (cluster001..cluster100).
func Render(state []fleet.Slice) string {
	var b strings.Builder
	for _, sl := range state {
		fmt.Fprintf(&b, "%-14s group %-8q index %-2s %3d  %s\n", sl.Name,
			sl.Labels[fleetv1alpha1.LabelDecisionGroupName], sl.Labels[fleetv1alpha1.LabelDecisionGroupIndex],
			len(sl.Clusters), FoldRuns(sl.Clusters))
	}
	return b.String()
}

// FoldRuns writes sorted cluster names with runs of consecutive numbers folded.
func FoldRuns(names []string) string {
	var parts []string
	for i := 0; i < len(names); {
		j := i
		for j+1 < len(names) && follows(names[j], names[j+1]) {
			j++
		}
		switch j {
		case i:
			parts = append(parts, names[i])
		case i + 1:
			parts = append(parts, names[i], names[j])
		default:
			parts = append(parts, names[i]+".."+names[j])
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// follows says whether b is a's successor: same prefix and width, number + 1.
func follows(a, b string) bool {
	pa, na, ok1 := splitNumber(a)
	pb, nb, ok2 := splitNumber(b)
	return ok1 && ok2 && pa == pb && len(a) == len(b) && nb == na+1
}

func splitNumber(s string) (string, int, bool) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	return s[:i], n, err == nil
}
