package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Pair is one strategy rolled by both controllers on the same cluster.
type Pair struct {
	Deployment, Lockstep Result
}

// WriteTable prints one line per strategy (strategies of one budget share the
// Deployment's figures): wall time of each controller, the
// ideal, each as a multiple of the ideal, and the Lockstep/Deployment ratios of
// time and of the writes each controller made itself (the pod lifecycle's, the
// same for both, and the Service endpoints kube-controller-manager keeps for a
// PodCliqueSet, left out and listed apart), then every write by resource.
func WriteTable(w io.Writer, pairs []Pair) {
	var b strings.Builder
	fmt.Fprintln(&b, "| strategy | pods | ideal | Deployment | Lockstep | Lockstep / Deployment: time | controller writes D / L | Lockstep / Deployment: writes |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|")
	for _, p := range pairs {
		d, l := p.Deployment, p.Lockstep
		fmt.Fprintf(&b, "| %s | %d | %s | %s (%.2fx) | %s (%.2fx) | %.2f | %.0f / %.0f | %.2f |\n",
			l.Strategy.Name, d.Pods, secs(d.Ideal), secs(d.Took), ratio(d.Took, d.Ideal), secs(l.Took), ratio(l.Took, l.Ideal),
			ratio(l.Took, d.Took), d.Writes.Controller(), l.Writes.Controller(), l.Writes.Controller()/max(d.Writes.Controller(), 1))
	}
	fmt.Fprintln(&b)
	for i, p := range pairs {
		rs := []Result{p.Deployment, p.Lockstep}
		if i > 0 && pairs[i-1].Deployment.Strategy.Name == p.Deployment.Strategy.Name {
			rs = rs[1:] // the Deployment's, shared with the line above
		}
		for _, r := range rs {
			fmt.Fprintf(&b, "%s, %s: %.0f controller writes (%s); pod lifecycle %.0f; Service endpoints %.0f\n", r.Controller, r.Strategy.Name,
				r.Writes.Controller(), controllerOnly(r.Writes), r.Writes.Lifecycle(), r.Writes.Endpoints())
		}
	}
	_, _ = io.WriteString(w, b.String())
}

func controllerOnly(w Writes) Writes {
	return w.filter(func(k string) bool { return !lifecycle(k) && !endpoints(k) })
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}

// WriteSets prints one line per PodCliqueSet rolled: its pods, wall time, the
// planner's own time with no control plane in the way, their ratio, and the
// writes by resource.
func WriteSets(w io.Writer, sets []SetResult) {
	var b strings.Builder
	fmt.Fprintln(&b, "| PodCliqueSet | pods | planner alone | Lockstep | Lockstep / planner | controller writes |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|")
	for _, s := range sets {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.2f | %.0f |\n", s.Name, s.Pods, secs(s.Ideal), secs(s.Took), ratio(s.Took, s.Ideal), s.Writes.Controller())
	}
	for _, s := range sets {
		fmt.Fprintf(&b, "%s: %.0f controller writes (%s); pod lifecycle %.0f; Service endpoints %.0f\n", s.Name,
			s.Writes.Controller(), controllerOnly(s.Writes), s.Writes.Lifecycle(), s.Writes.Endpoints())
	}
	_, _ = io.WriteString(w, b.String())
}
