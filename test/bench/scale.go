package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// ScaleSide is one controller's turn in `make bench-scale`: Sets workloads of
// Pods pods each, created, rolled and deleted all together.
type ScaleSide struct {
	// Controller names the side ("Deployment", "Lockstep"); Process the
	// process whose CPU and memory are counted as the controller's.
	Controller, Process string
	// Create runs from the first create until every workload's controller
	// reports all its pods available; Roll from the first template change
	// until every one reports all its pods updated and available; Drain from
	// the same start until no pod of the old template is left; Delete from the
	// first delete until no pod is left. Zero: the phase did not end.
	Create, Roll, Drain, Delete time.Duration
	// The apiserver's writes of each phase, counted until they have stood
	// still after it: every write the phase caused is in it.
	CreateWrites, RollWrites, DeleteWrites Writes
	// CPU is the process's CPU seconds over the three phases (NaN when it was
	// not measured); PeakRSS its resident set's high-water mark over the side,
	// in bytes (0 when not measured).
	CPU     float64
	PeakRSS uint64
}

// Writes is every write of the side's three phases.
func (s ScaleSide) Writes() Writes {
	return s.CreateWrites.Plus(s.RollWrites).Plus(s.DeleteWrites)
}

// ScaleReport is `make bench-scale`: the same workloads rolled by the
// Deployment controller and by Lockstep, one side after the other.
type ScaleReport struct {
	Sets, Pods int
	// Budget is the rollouts' maxSurge/maxUnavailable, ReadyDelay the time a
	// pod takes from bound to ready.
	Budget     string
	ReadyDelay time.Duration
	// QPS says what client rate limits the two controllers had.
	QPS                  string
	Deployment, Lockstep ScaleSide
}

// Write prints the two sides side by side, with Lockstep/Deployment ratios,
// then each side's writes by resource. Writes per pod are the writes to
// objects (Writes.Objects: not the pod lifecycle's, the Service endpoints' or
// Events) over Sets × Pods; Events are counted apart.
func (r ScaleReport) Write(w io.Writer) {
	var b strings.Builder
	total := r.Sets * r.Pods
	d, l := r.Deployment, r.Lockstep
	fmt.Fprintf(&b, "%d Deployments, then %d PodCliqueSets of one clique, × %d pods (%d pods a side); %s; pods ready %s after binding\n",
		r.Sets, r.Sets, r.Pods, total, r.Budget, r.ReadyDelay)
	fmt.Fprintf(&b, "%s\n", r.QPS)
	line := func(name, dv, lv, ratio string) {
		fmt.Fprintf(&b, "  %-42s %14s %14s %6s\n", name, dv, lv, ratio)
	}
	row := func(name, dv, lv string, ratio float64) {
		rs := "—"
		if !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
			rs = fmt.Sprintf("%.2f", ratio)
		}
		line(name, dv, lv, rs)
	}
	line("", "Deployment", "Lockstep", "L/D")
	phase := func(name string, dt, lt time.Duration) {
		ratio := math.NaN()
		if dt > 0 && lt > 0 {
			ratio = lt.Seconds() / dt.Seconds()
		}
		row(name, took(dt), took(lt), ratio)
	}
	phase("create, to all available", d.Create, l.Create)
	phase("roll, to all updated and available", d.Roll, l.Roll)
	phase("roll, to no old pod left", d.Drain, l.Drain)
	phase("delete, to no pod left", d.Delete, l.Delete)
	perPod := func(name string, dw, lw float64) {
		dv, lv := dw/float64(total), lw/float64(total)
		row(name, fmt.Sprintf("%.2f", dv), fmt.Sprintf("%.2f", lv), div(lv, dv))
	}
	perPod("writes per pod, create", d.CreateWrites.Objects(), l.CreateWrites.Objects())
	perPod("writes per pod, roll", d.RollWrites.Objects(), l.RollWrites.Objects())
	perPod("writes per pod, delete", d.DeleteWrites.Objects(), l.DeleteWrites.Objects())
	perPod("writes per pod, all three", d.Writes().Objects(), l.Writes().Objects())
	perPod("Event writes per pod, all three", d.Writes().Events(), l.Writes().Events())
	row("controller CPU, all three", cpu(d.CPU)+"*", cpu(l.CPU), div(l.CPU, d.CPU))
	rss := math.NaN()
	if d.PeakRSS > 0 && l.PeakRSS > 0 {
		rss = float64(l.PeakRSS) / float64(d.PeakRSS)
	}
	row("controller peak RSS", mib(d.PeakRSS)+"*", mib(l.PeakRSS), rss)
	fmt.Fprintf(&b, "  * %s: every controller it runs (ReplicaSets, garbage collector, endpoints, ...), not the Deployment controller alone; %s: the operator process\n",
		d.Process, l.Process)
	for _, s := range []ScaleSide{d, l} {
		all := s.Writes()
		fmt.Fprintf(&b, "  %s, writes of the three phases: %s; Events %s; pod lifecycle %.0f; Service endpoints %.0f\n",
			s.Controller, all.filter(object), all.filter(events), all.Lifecycle(), all.Endpoints())
	}
	_, _ = io.WriteString(w, b.String())
}

func took(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func cpu(s float64) string {
	if math.IsNaN(s) {
		return "—"
	}
	return fmt.Sprintf("%.1f s", s)
}

func mib(b uint64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// div is a/b, NaN when b is zero (or either is NaN).
func div(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
