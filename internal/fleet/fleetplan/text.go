package fleetplan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// WriteText prints the shares, one line per wave (the fleet right after the
// members acted, then each member's updated/desired units and grant at the end
// of the wave) and the result.
func WriteText(w io.Writer, in Input, r Result) error {
	fw := in.Workload
	var b strings.Builder
	unit := in.Kind.Unit() + "s"
	fmt.Fprintf(&b, "FederatedWorkload %s: %d %s of a %s over %d clusters, rolled under one budget: maxUnavailable %d, maxSurge %d",
		fw.Name, fw.Spec.Replicas, unit, in.Kind, len(r.Shares), r.First.MaxUnavailable, r.First.MaxSurge)
	if s := r.Strategy; s.Partition > 0 {
		fmt.Fprintf(&b, ", partition %d", s.Partition)
	}
	if r.Strategy.Paused {
		b.WriteString(", paused")
	}
	fmt.Fprintf(&b, "; each wave is %s (units available %s after they start)\n", in.Startup, in.Startup)
	fmt.Fprintf(&b, "  shares:")
	for _, s := range r.Shares {
		fmt.Fprintf(&b, " %s %d", s.Cluster, s.Units)
	}
	b.WriteString("\n\n")

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "WAVE\tTIME\tAVAILABLE\tUNITS")
	for _, s := range r.Shares {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(s.Cluster))
	}
	fmt.Fprintln(tw)
	for i, wv := range r.Waves {
		fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%d/%d", i+1, time.Duration(i)*in.Startup, wv.Available, r.Floor, wv.Units, r.Ceiling)
		for _, m := range wv.Members {
			fmt.Fprintf(tw, "\t%s", cell(in.Kind, m))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n  AVAILABLE: fewest available units in the wave / the floor; UNITS: most units / the ceiling.\n")
	b.WriteString("  Per cluster: updated/share units at the end of the wave, then its grant.\n\n")
	b.WriteString(r.summary(in))
	_, err := io.WriteString(w, b.String())
	return err
}

// cell is one member in one wave: "3/4 +1 -1" for a Deployment (its maxSurge
// and maxUnavailable), "3/4 p1" for a partitioned member, "-" before it starts.
func cell(k member.Kind, m align.WaveMember) string {
	g := m.Grant
	s := fmt.Sprintf("%d/%d ", m.Updated, m.Desired)
	switch {
	case !g.Started:
		s += "held"
	case k.Align() == align.Partitioned:
		s += fmt.Sprintf("partition %d", g.Partition)
	case g.Paused:
		s += "paused"
	default:
		s += fmt.Sprintf("surge %d unavail %d", g.MaxSurge, g.MaxUnavailable)
	}
	return s
}

func (r Result) summary(in Input) string {
	var b strings.Builder
	n := len(r.Waves)
	switch {
	case len(r.Breaches) > 0:
		fmt.Fprintf(&b, "Result: Violation. %s\n", strings.Join(r.Breaches, "; "))
	case r.Done && n == 0:
		b.WriteString("Result: Nothing moves: every member at rest on the current FederatedWorkload already runs what the new one asks.\n")
	case r.Done && r.IdealWaves() == 0:
		fmt.Fprintf(&b, "Result: Complete after %d waves (%s); no unit changes revision, the shares move.\n", n, time.Duration(n)*in.Startup)
	case r.Done:
		fmt.Fprintf(&b, "Result: Complete after %d waves (%s); the fewest any rollout could take is %d (units allowed to update / (maxUnavailable + maxSurge)).\n",
			n, time.Duration(n)*in.Startup, r.IdealWaves())
	default:
		fmt.Fprintf(&b, "Result: Stuck after %d waves.", n)
		if n > 0 {
			for _, m := range r.Waves[n-1].Plan.Members {
				if m.Waiting != "" {
					fmt.Fprintf(&b, " %s: %s.", m.Name, m.Waiting)
				}
			}
		}
		b.WriteString("\n")
	}
	if n > 0 {
		if short := r.Waves[n-1].Plan.WholeShareShortfall; short > 0 {
			fmt.Fprintf(&b, "  %d units stay old: a Deployment member takes its whole share or none of it.\n", short)
		}
	}
	return b.String()
}
