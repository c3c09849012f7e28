package fleetplan

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
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
	b.WriteString("  shares: " + r.shareList() + "\n")
	for _, name := range slices.Sorted(maps.Keys(in.Late)) {
		fmt.Fprintf(&b, "  late: %s's status reaches the hub %d %s late (--late %s=%d)\n",
			name, in.Late[name], plural(in.Late[name], "round"), name, in.Late[name])
	}
	for _, name := range slices.Sorted(maps.Keys(in.Lose)) {
		fmt.Fprintf(&b, "  lost: %s is unreachable to the hub from wave %d on (--lose %s@%d); memberLostTimeoutSeconds %s\n",
			name, in.Lose[name], name, in.Lose[name], lostTimeout(fw))
	}
	b.WriteString("\n")

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "WAVE\tTIME\tAVAILABLE\tUNITS")
	for _, s := range r.Shares {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(s.Cluster))
	}
	fmt.Fprintln(tw)
	unreached := false
	for i, wv := range r.Waves {
		fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%d/%d", i+1, time.Duration(i)*in.Startup, wv.Available, wv.Floor, wv.Units, r.Ceiling)
		for _, m := range wv.Members {
			c := cell(in.Kind, m)
			if u, ok := unreachedIn(wv, m.Name); ok {
				c, unreached = unreachedCell(m, u), true
			}
			fmt.Fprintf(tw, "\t%s", c)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n  AVAILABLE: fewest available units in the wave / the floor; UNITS: most units / the ceiling.\n")
	b.WriteString("  Per cluster: updated/share units at the end of the wave, then its grant.\n")
	if unreached {
		b.WriteString("  Unreachable: the hub reads nothing from the cluster and writes nothing to it. It is stale, charged what\n")
		b.WriteString("  its last grant lets it do, until memberLostTimeoutSeconds pass; then lost: written off, its share held\n")
		b.WriteString("  back from the others until they have grown into it, then forgotten. What it runs is out of the hub's\n")
		b.WriteString("  hands: AVAILABLE and UNITS count the clusters the hub reaches, against the floor less the shares it\n")
		b.WriteString("  still holds for the clusters it cannot reach.\n")
	}
	if st := in.Workload.Spec.RolloutStrategy.Stages; st != nil {
		b.WriteString("\n" + stagesText(in, r, st))
	}
	b.WriteString("\n")
	b.WriteString(r.summary(in))
	_, err := io.WriteString(w, b.String())
	return err
}

// shareList is each cluster's share, "eu-1 4 us-1 6", or, when the change
// moves shares, "eu-1 4 → 3, us-1 6 → 9".
func (r Result) shareList() string {
	moved := false
	var parts []string
	for i, s := range r.Shares {
		if r.From != nil && r.From[i].Units != s.Units {
			parts, moved = append(parts, fmt.Sprintf("%s %d → %d", s.Cluster, r.From[i].Units, s.Units)), true
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", s.Cluster, s.Units))
		}
	}
	if moved {
		return strings.Join(parts, ", ")
	}
	return strings.Join(parts, " ")
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

func unreachedIn(w Wave, name string) (Unreached, bool) {
	for _, u := range w.Unreached {
		if u.Cluster == name {
			return u, true
		}
	}
	return Unreached{}, false
}

// unreachedCell is a cluster the hub could not reach, as its round saw it
// and charged it: "stale, charged 2 down 1 surge", "lost, 4 written off" or
// "forgotten"; its updated units are what it runs, out of the hub's sight.
func unreachedCell(m align.WaveMember, u Unreached) string {
	switch {
	case u.Forgotten:
		return fmt.Sprintf("%d/- forgotten", m.Updated)
	case u.WrittenOff:
		return fmt.Sprintf("%d/%d lost, %d written off", m.Updated, u.Share, u.Share)
	case u.Reach == align.Lost:
		return fmt.Sprintf("%d/%d lost, charged %d down %d surge", m.Updated, u.Share, u.Unavailable, u.Surge)
	default:
		return fmt.Sprintf("%d/%d stale, charged %d down %d surge", m.Updated, u.Share, u.Unavailable, u.Surge)
	}
}

func (r Result) summary(in Input) string {
	var b strings.Builder
	n := len(r.Waves)
	switch {
	case len(r.Breaches) > 0:
		fmt.Fprintf(&b, "Result: Violation. %s\n", strings.Join(r.Breaches, "; "))
	case r.Stuck != "":
		fmt.Fprintf(&b, "Result: Stuck after %d waves: the hub cannot plan a round (%s).\n", n, r.Stuck)
	case r.Halted:
		fmt.Fprintf(&b, "Result: Halted after %d waves: %s\n", n, progressingMessage(r.Status))
	case r.Held:
		fmt.Fprintf(&b, "Result: Stuck after %d waves, held by design: %s\n", n, progressingMessage(r.Status))
	case r.Status.Gate != nil && !r.Done:
		// a stage gate that nothing scripted opens
		fmt.Fprintf(&b, "Result: Stuck after %d waves at a stage gate: %s\n", n, progressingMessage(r.Status))
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
	for _, lc := range r.Lost {
		b.WriteString("  " + lc.story(in, r) + "\n")
	}
	if n > 0 && r.Done {
		if short := r.Waves[n-1].Plan.WholeShareShortfall; short > 0 {
			fmt.Fprintf(&b, "  %d units stay old: a Deployment member takes its whole share or none of it.\n", short)
		}
	}
	return b.String()
}

// story says what became of a lost cluster.
func (lc LostCluster) story(in Input, r Result) string {
	unit := in.Kind.Unit() + "s"
	if lc.From == 0 {
		return fmt.Sprintf("%s: never lost: the plan ended before wave %d.", lc.Cluster, in.Lose[lc.Cluster])
	}
	s := fmt.Sprintf("%s: unreachable from wave %d, holding a share of %d", lc.Cluster, lc.From, lc.Share)
	switch {
	case lc.Lost == 0 && r.Stuck != "":
		return s + "; the hub planned no round after that."
	case lc.Lost == 0:
		return s + fmt.Sprintf("; stale, charged its last grant, to the end: memberLostTimeoutSeconds (%s) had not passed.", lostTimeout(in.Workload))
	case lc.Forgotten == 0:
		return s + fmt.Sprintf("; lost at wave %d and written off; still planned at the end.", lc.Lost)
	}
	var others []string
	for _, c := range r.Status.Clusters {
		others = append(others, fmt.Sprintf("%s %d", c.Name, c.DesiredReplicas))
	}
	forgotten := fmt.Sprintf("at wave %d", lc.Forgotten)
	if lc.Forgotten > len(r.Waves) {
		forgotten = "at the last round"
	}
	return s + fmt.Sprintf("; lost at wave %d and written off, its share divided over the others (%s); forgotten %s, once they had grown into it. The %d %s it runs stay there, out of the hub's reach.",
		lc.Lost, strings.Join(others, ", "), forgotten, lc.Runs, unit)
}

// lostTimeout is the workload's memberLostTimeoutSeconds, as a duration.
func lostTimeout(fw *fleetv1alpha1.FederatedWorkload) time.Duration {
	s := int32(fleetv1alpha1.DefaultMemberLostTimeoutSeconds)
	if t := fw.Spec.MemberLostTimeoutSeconds; t != nil {
		s = *t
	}
	return time.Duration(s) * time.Second
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// stagesText is the stages' timeline: the waves at which where the stages
// stand changed, and the stages' phases at the end.
func stagesText(in Input, r Result, st *fleetv1alpha1.RolloutStages) string {
	var b strings.Builder
	kind := st.Type
	if kind == "" {
		kind = fleetv1alpha1.StagesAll
	}
	fmt.Fprintf(&b, "Stages (%s", kind)
	if st.MinSuccessTime.Duration > 0 {
		fmt.Fprintf(&b, ", minSuccessTime %s", st.MinSuccessTime.Duration)
	}
	if st.ProgressDeadline.Duration > 0 {
		fmt.Fprintf(&b, ", progressDeadline %s", st.ProgressDeadline.Duration)
	}
	if st.Gate != nil {
		b.WriteString(", a gate after each stage")
	}
	b.WriteString("):\n")
	last := ""
	for i, w := range r.Waves {
		if w.Stages != last {
			fmt.Fprintf(&b, "  wave %d (%s): %s\n", i+1, time.Duration(i)*in.Startup, w.Stages)
			last = w.Stages
		}
	}
	for _, s := range r.Status.Stages {
		fmt.Fprintf(&b, "  %-12s %-16s %s\n", s.Name, s.Phase, strings.Join(s.Clusters, " "))
	}
	return b.String()
}
