//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/testenv"
	"github.com/lockstep-dev/lockstep/test/bench"
)

// Env variables of TestBench_Scale; `make bench-scale` sets 100 × 100. The e2e
// suite runs a short version.
const (
	envScaleSets = "LOCKSTEP_BENCH_SCALE_SETS"
	envScalePods = "LOCKSTEP_BENCH_SCALE_PODS"
	// envScaleIdle is the settled window over which the operator's writes are
	// counted (a duration; 60s in `make bench-scale`).
	envScaleIdle = "LOCKSTEP_BENCH_SCALE_IDLE"
	// envScalePhaseTimeout bounds each phase (30m unless set): on two cores
	// kwok and the scheduler move 10,000 pods in about half an hour.
	envScalePhaseTimeout = "LOCKSTEP_BENCH_SCALE_PHASE_TIMEOUT"
	// envScalePeerDNS is the peerDNS of the PodCliqueSets' clique: Replica
	// (the default: a headless Service per replica, whose endpoints
	// kube-controller-manager keeps) or None (no Service).
	envScalePeerDNS = "LOCKSTEP_BENCH_SCALE_PEER_DNS"
	// envScaleSurgePlacement is the PodCliqueSets' surgePlacement:
	// AboveReplicas (the default: surge pods at indices of their own, made and
	// removed again) or ReplacedIndex (at the index they replace, as a
	// Deployment's new pods).
	envScaleSurgePlacement = "LOCKSTEP_BENCH_SCALE_SURGE_PLACEMENT"
)

// The shape both controllers roll in TestBench_Scale: pods ready exactly
// scaleReadyDelay after they are bound, 25%/25%.
const (
	scaleImage      = "lockstep-bench/scale"
	scaleReadyDelay = time.Second
)

var scaleStrategy = bench.Strategy{Name: "maxSurge 25%, maxUnavailable 25%",
	MaxSurge: intstr.FromString("25%"), MaxUnavailable: intstr.FromString("25%")}

func scaleTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "scale"},
			Annotations: map[string]string{readyDelayAnnotation: scaleReadyDelay.String()}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: scaleImage + ":v1"}}},
	}
}

// The same shape twice on one cluster, one side after the other: N
// Deployments of P pods (rolled by kube-controller-manager), then N
// PodCliqueSets of one clique of P pods (rolled by Lockstep), with the same
// budget and ready delay. Each side is created, rolled and deleted all
// together; the two are printed side by side: each phase's time, the
// apiserver's writes per pod (test/bench's rules), the controller's CPU
// seconds and peak RSS (/proc). Between the sides, the operator's memory
// beside the Deployments' pods, which it does not cache. The figures are
// printed, not asserted (speed is measured, not tested); the test asserts that
// every phase finishes and that a settled cluster gets no write from the
// operator.
func TestBench_Scale(t *testing.T) {
	sets, pods := envInt(t, envScaleSets, 2), envInt(t, envScalePods, 10)
	idle := envDuration(t, envScaleIdle, 5*time.Second)
	ctx := t.Context()
	// Each simulated node takes 1000 pods. Leave room for the surge and for
	// the pods still terminating beside it: with room for the surge alone, a
	// roll on a loaded machine (kwok removing deleted pods late) filled every
	// node and its new pods waited in the scheduler's backoff ("Too many
	// pods"), which measured the fake nodes, not the controller.
	if err := testCluster.SetNodes(ctx, max(2, (sets*pods*2+999)/1000)); err != nil {
		t.Fatal(err)
	}
	kcm, err := testCluster.ComponentPID("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	op := testOperator.pid()
	if op == 0 {
		t.Fatal("the operator is not running")
	}
	b := &scaleBench{t: t, sets: sets, pods: pods,
		timeout: envDuration(t, envScalePhaseTimeout, 30*time.Minute),
		// Listing every pod every 50 ms would load the apiserver of a large
		// run: 1 s at 10,000 pods.
		poll: min(max(time.Duration(sets*pods)*100*time.Microsecond, 50*time.Millisecond), time.Second)}
	awaitNoNamespaceTerminating(t)
	rep := bench.ScaleReport{Sets: sets, Pods: pods, Budget: scaleStrategy.Name, ReadyDelay: scaleReadyDelay, QPS: clientQPS(t, kcm, op)}
	peerDNS := envChoice(t, envScalePeerDNS, v1alpha1.PeerDNSReplica, v1alpha1.PeerDNSNone)
	surge := envChoice(t, envScaleSurgePlacement, v1alpha1.AboveReplicas, v1alpha1.ReplacedIndex)
	notes := []string{fmt.Sprintf("the PodCliqueSets' clique has peerDNS %s (%s), surgePlacement %s", peerDNS,
		map[bool]string{true: "a headless Service per replica", false: "no Service"}[peerDNS.Resolvable()], surge)}
	var lockstepStarted bool
	var opStart operatorScrape
	var servedStart histogram
	// report prints what was measured; a run that fails still tells it.
	report := func(ctx context.Context, settled string) {
		var out bytes.Buffer
		rep.Write(&out)
		for _, n := range notes {
			fmt.Fprintf(&out, "  %s\n", n)
		}
		if lockstepStarted {
			lockstepFigures(ctx, &out, opStart, servedStart, sets*pods, settled)
		}
		t.Log(out.String())
	}
	finished := false
	t.Cleanup(func() {
		if !finished { // t.Context() is done by now
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			report(ctx, "; the run stopped before the settled window")
		}
	})

	// The Deployments, rolled by kube-controller-manager. The operator's cache
	// holds only the pods Lockstep made: beside the Deployments' pods it should
	// stay small, and write nothing.
	opBefore, err := scrapeOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opProcBefore := b.startPeak(op)
	b.side(ctx, &rep.Deployment, sideRun{
		controller: "Deployment", process: "kube-controller-manager", pid: kcm,
		w: &scaleDeployments{ns: newNamespace(t, "scale-deploy"), pods: pods},
		between: func(ctx context.Context) {
			p, err := bench.ReadProc(op)
			if err != nil {
				t.Fatalf("reading the operator's memory: %v", err)
			}
			notes = append(notes, fmt.Sprintf("operator RSS beside %d foreign pods (the Deployments', rolled once; no PodCliqueSet yet): %.0f MiB now, peak %.0f MiB since the Deployments were created",
				sets*pods, float64(p.RSS)/(1<<20), float64(p.PeakRSS)/(1<<20)))
		},
	})
	if opAfter, err := scrapeOperator(ctx); err == nil {
		cpu := math.NaN()
		if p, err := bench.ReadProc(op); err == nil && opProcBefore != nil {
			cpu = p.CPU - opProcBefore.CPU
		}
		notes = append(notes, fmt.Sprintf("operator over the Deployments' side: %.0f writes, %.1f CPU s", opAfter.writes-opBefore.writes, cpu))
	}

	// The PodCliqueSets, rolled by Lockstep. After the roll, a settled cluster:
	// the operator must not write at all.
	if opStart, err = scrapeOperator(ctx); err != nil {
		t.Fatal(err)
	}
	if servedStart, err = scrapeAPIServerWrites(ctx); err != nil {
		t.Fatal(err)
	}
	lockstepStarted = true
	kcmBefore, kcmErr := bench.ReadProc(kcm)
	var idleWrites, lateEventWrites float64
	b.side(ctx, &rep.Lockstep, sideRun{
		controller: "Lockstep", process: "operator", pid: op,
		w: &scaleSets{ns: newNamespace(t, "scale"), pods: pods, peerDNS: peerDNS, surge: surge, from: map[string]string{}},
		// Settled includes the status changes that only move progress, which
		// may wait for write.StatusBatch: the window starts once the
		// operator's writes have stood still for twice that.
		still: func(ctx context.Context) (float64, error) {
			s, err := scrapeOperator(ctx)
			return s.writes, err
		},
		between: func(ctx context.Context) {
			before, err := scrapeOperator(ctx)
			if err != nil {
				t.Fatal(err)
			}
			served, err := bench.ScrapeWrites(ctx, testCluster.RESTConfig)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(idle): // the measuring window itself
			}
			after, err := scrapeOperator(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Earlier tests' Event series may close now (bench.SplitSettled):
			// those writes are told apart; an Event recorded now is not.
			recorded := after.recorded - before.recorded
			idleWrites, lateEventWrites = bench.SplitSettled(after.byResource.Minus(before.byResource), recorded)
			if idleWrites != 0 || recorded != 0 {
				// which ones, as far as the apiserver tells
				w, err := bench.ScrapeWrites(ctx, testCluster.RESTConfig)
				if err != nil {
					t.Fatal(err)
				}
				t.Errorf("the operator wrote %v times in %s of a settled cluster (%s to %s), besides %v late Event writes, and recorded %v Events; its writes by resource: %s; the apiserver's writes then, the pod lifecycle's left out: %s",
					idleWrites, idle, began.Format("15:04:05.000"), time.Now().Format("15:04:05.000"), lateEventWrites, recorded,
					after.byResource.Minus(before.byResource), w.Minus(served).WithoutLifecycle())
			}
		},
	})
	if kcmAfter, err := bench.ReadProc(kcm); err == nil && kcmErr == nil {
		notes = append(notes, fmt.Sprintf("kube-controller-manager over the PodCliqueSets' side (their headless Services' endpoints, the garbage collector): %.1f CPU s",
			kcmAfter.CPU-kcmBefore.CPU))
	}
	finished = true
	report(ctx, fmt.Sprintf("; %.0f in %s settled, besides %.0f late writes of Event series recorded before it", idleWrites, idle, lateEventWrites))
}

// awaitNoNamespaceTerminating waits, for a minute at most, until no namespace
// is being deleted: the namespace controller empties one with a write for
// every kind it could hold, which would be counted as a side's.
func awaitNoNamespaceTerminating(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var terminating []string
	for {
		var list corev1.NamespaceList
		if err := testCluster.Client.List(t.Context(), &list); err == nil {
			terminating = terminating[:0]
			for i := range list.Items {
				if list.Items[i].DeletionTimestamp != nil {
					terminating = append(terminating, list.Items[i].Name)
				}
			}
			if len(terminating) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Logf("namespaces %v still terminating after a minute: the writes that delete them may be counted", terminating)
			return
		}
		select {
		case <-t.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lockstepFigures prints the operator's own figures since start: reconcile
// latency, its writes' latency and its wait for its own rate limit, the
// apiserver's latency of every write, and the operator's write count.
func lockstepFigures(ctx context.Context, out *bytes.Buffer, start operatorScrape, startServed histogram, total int, settled string) {
	end, err := scrapeOperator(ctx)
	if err != nil {
		fmt.Fprintf(out, "  reading the operator's metrics: %v\n", err)
		return
	}
	endServed, err := scrapeAPIServerWrites(ctx)
	if err != nil {
		fmt.Fprintf(out, "  reading the apiserver's metrics: %v\n", err)
		return
	}
	fmt.Fprintf(out, "  the PodCliqueSets' side, from the operator's metrics:\n")
	rec := end.reconcile.minus(start.reconcile)
	fmt.Fprintf(out, "    reconcile latency (every controller)  p50 %s  p99 %s\n", fmtSeconds(rec.quantile(0.5)), fmtSeconds(rec.quantile(0.99)))
	// What a reconcile's time is made of: its writes' round trips, and the
	// wait for the client's own rate limit before them.
	req, wait := end.requests.minus(start.requests), end.throttled.minus(start.throttled)
	fmt.Fprintf(out, "    operator write latency  p50 %s  p99 %s; wait for its rate limit (every request)  p50 %s  p99 %s\n",
		fmtSeconds(req.quantile(0.5)), fmtSeconds(req.quantile(0.99)), fmtSeconds(wait.quantile(0.5)), fmtSeconds(wait.quantile(0.99)))
	served := endServed.minus(startServed)
	fmt.Fprintf(out, "    apiserver latency of every write it served (kwok, scheduler, controllers, operator)  p50 %s  p99 %s\n",
		fmtSeconds(served.quantile(0.5)), fmtSeconds(served.quantile(0.99)))
	fmt.Fprintf(out, "    operator writes (its own count)  %.0f (%.2f per pod created, rolled and deleted)%s\n",
		end.writes-start.writes, (end.writes-start.writes)/float64(total), settled)
	// The pods' bucket paces a roll at scale: its writes over the client's
	// QPS are the least time they could take.
	fmt.Fprintf(out, "    operator pod writes by verb  %s; its writes that failed, by method and code  %s\n",
		bench.Growth(end.podWrites, start.podWrites), bench.Growth(end.failed, start.failed))
}

// clientQPS says the client rate limits of kube-controller-manager and the
// operator, from their command lines (their defaults when not given).
func clientQPS(t *testing.T, kcm, op int) string {
	t.Helper()
	limits := func(pid int, qps, burst string) string {
		args, err := bench.ProcArgs(pid)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := bench.FlagValue(args, "--kube-api-qps"); ok {
			qps = v
		}
		if v, ok := bench.FlagValue(args, "--kube-api-burst"); ok {
			burst = v
		}
		return qps + "/" + burst
	}
	// kube-controller-manager's defaults are 20/30, the operator's 50/100
	// (cmd/lockstep).
	k, o := limits(kcm, "20", "30"), limits(op, "50", "100")
	s := fmt.Sprintf("client QPS/burst: kube-controller-manager %s (each of its controllers' own client), operator %s (one client for all its controllers, paced per resource: its pod writes have a bucket of their own)", k, o)
	if k != o {
		s += "; not equal (`make bench-scale` gives kube-controller-manager the operator's)"
	}
	return s
}

// scaleBench runs the sides of TestBench_Scale.
type scaleBench struct {
	t          *testing.T
	sets, pods int
	// timeout bounds each phase; poll is how often a phase's end is looked for.
	timeout, poll time.Duration
}

// startPeak makes the process's peak RSS count from now on and returns what
// /proc says of it now (nil when it cannot be read). For the operator, the
// peak so far goes into its run summary first.
func (b *scaleBench) startPeak(pid int) *bench.Proc {
	if pid == testOperator.pid() {
		if hwm, err := testOperator.currentPeakRSS(); err == nil {
			testOperator.mu.Lock()
			testOperator.peakRSS = max(testOperator.peakRSS, hwm)
			testOperator.mu.Unlock()
		}
	}
	if err := bench.ResetPeakRSS(pid); err != nil {
		b.t.Logf("cannot reset the peak RSS of pid %d (it counts from the process's start): %v", pid, err)
	}
	p, err := bench.ReadProc(pid)
	if err != nil {
		b.t.Logf("reading pid %d: %v", pid, err)
		return nil
	}
	return &p
}

// scaleWorkload is one side's kind of workload.
type scaleWorkload interface {
	namespace() string
	create(ctx context.Context, name string) error
	// roll changes the template to the image tagged v2.
	roll(ctx context.Context, name string) error
	remove(ctx context.Context, name string) error
	// rolledOut reports whether every workload's controller says all its
	// pods are updated (at tag) and available.
	rolledOut(ctx context.Context, sets int, tag string) (bool, string, error)
}

// sideRun is one side of TestBench_Scale.
type sideRun struct {
	controller, process string
	// pid is the controller's process.
	pid int
	w   scaleWorkload
	// still, when set, is a count that must stand still beside the
	// apiserver's before a phase's writes are counted.
	still func(context.Context) (float64, error)
	// between runs after the roll has settled, before the delete, outside
	// the phases (its writes and CPU are not counted).
	between func(context.Context)
}

// side creates, rolls and deletes b.sets workloads of b.pods pods each,
// filling res as it goes.
func (b *scaleBench) side(ctx context.Context, res *bench.ScaleSide, r sideRun) {
	t := b.t
	t.Helper()
	res.Controller, res.Process, res.CPU = r.controller, r.process, math.NaN()
	total := b.sets * b.pods
	names := make([]string, b.sets)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%03d", i)
	}
	all := func(act func(context.Context, string) error) func() error {
		return func() error {
			for _, n := range names {
				if err := act(ctx, n); err != nil {
					return err
				}
			}
			return nil
		}
	}
	start := b.startPeak(r.pid)
	w0 := b.quiet(ctx, r.still)

	res.Create = b.phase(ctx, fmt.Sprintf("%s: create %d × %d pods, to all available", r.controller, b.sets, b.pods), all(r.w.create),
		func(ctx context.Context) (bool, string, error) { return r.w.rolledOut(ctx, b.sets, "v1") })
	w1 := b.quiet(ctx, r.still)
	res.CreateWrites = w1.Minus(w0)

	began := time.Now()
	res.Roll = b.phase(ctx, r.controller+": roll, to all updated and available", all(r.w.roll),
		func(ctx context.Context) (bool, string, error) { return r.w.rolledOut(ctx, b.sets, "v2") })
	b.await(ctx, r.controller+": roll, to no old pod left", func(ctx context.Context) (bool, string, error) {
		var list corev1.PodList
		if err := testCluster.Client.List(ctx, &list, client.InNamespace(r.w.namespace())); err != nil {
			return false, "", err
		}
		old := 0
		for i := range list.Items {
			if p := &list.Items[i]; p.DeletionTimestamp != nil || p.Spec.Containers[0].Image != scaleImage+":v2" {
				old++
			}
		}
		return len(list.Items) == total && old == 0, fmt.Sprintf("%d pods, %d of them old or terminating", len(list.Items), old), nil
	})
	res.Drain = time.Since(began)
	t.Logf("%s: roll, to no old pod left: %s", r.controller, res.Drain.Round(100*time.Millisecond))
	w2 := b.quiet(ctx, r.still)
	res.RollWrites = w2.Minus(w1)

	var outside float64 // CPU seconds outside the phases
	if r.between != nil {
		p0, err0 := bench.ReadProc(r.pid)
		r.between(ctx)
		if p1, err1 := bench.ReadProc(r.pid); err0 == nil && err1 == nil {
			outside = p1.CPU - p0.CPU
		}
	}
	w3, err := bench.ScrapeWrites(ctx, testCluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}

	res.Delete = b.phase(ctx, r.controller+": delete, to no pod left", all(r.w.remove), func(ctx context.Context) (bool, string, error) {
		var list corev1.PodList
		if err := testCluster.Client.List(ctx, &list, client.InNamespace(r.w.namespace())); err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items)), nil
	})
	w4 := b.quiet(ctx, r.still)
	res.DeleteWrites = w4.Minus(w3)

	end, err := bench.ReadProc(r.pid)
	if err != nil || start == nil {
		t.Logf("%s: cannot read %s (pid %d) at the end of its side: %v", r.controller, r.process, r.pid, err)
		return
	}
	res.CPU, res.PeakRSS = end.CPU-start.CPU-outside, end.PeakRSS
}

// phase runs act and waits until done, and returns how long that took.
func (b *scaleBench) phase(ctx context.Context, name string, act func() error, done func(context.Context) (bool, string, error)) time.Duration {
	b.t.Helper()
	began := time.Now()
	if err := act(); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
	b.await(ctx, name, done)
	took := time.Since(began)
	b.t.Logf("%s: %s", name, took.Round(100*time.Millisecond))
	return took
}

// await polls cond every b.poll until it holds, failing the test after
// b.timeout; a long wait logs where it is every minute. API errors are
// retried.
func (b *scaleBench) await(ctx context.Context, what string, cond func(context.Context) (bool, string, error)) {
	b.t.Helper()
	b.awaitEvery(ctx, what, b.poll, cond)
}

// awaitEvery is await, polling every poll.
func (b *scaleBench) awaitEvery(ctx context.Context, what string, poll time.Duration, cond func(context.Context) (bool, string, error)) {
	b.t.Helper()
	began, told := time.Now(), time.Now()
	var state string
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ok, s, err := cond(cctx)
		cancel()
		if err != nil {
			s = err.Error()
		}
		if ok && err == nil {
			return
		}
		state = s
		if time.Since(began) > b.timeout {
			b.t.Fatalf("timed out after %s waiting for %s; last state: %s", b.timeout, what, state)
		}
		if time.Since(told) >= time.Minute { // a long phase shows where it is
			b.t.Logf("%s, %s in: %s", what, time.Since(began).Round(time.Second), state)
			told = time.Now()
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("%s: %v; last state: %s", what, ctx.Err(), state)
		case <-time.After(poll):
		}
	}
}

// quiet waits until the apiserver's writes, all but the pod lifecycle's (node
// heartbeats and leases go on), and still's count when set, have stood still
// for twice write.StatusBatch (a status change that only moves progress may
// wait that long), and returns the apiserver's count then. Writes the
// apiserver serves to someone else would keep it waiting: after quietCap it
// waits for still's count alone.
func (b *scaleBench) quiet(ctx context.Context, still func(context.Context) (float64, error)) bench.Writes {
	b.t.Helper()
	var last bench.Writes
	var lastN, lastStill float64
	began, since, capped := time.Now(), time.Now(), false
	// Every look reads the apiserver's whole /metrics: not too often.
	b.awaitEvery(ctx, "the writes to stand still", max(b.poll, 250*time.Millisecond), func(ctx context.Context) (bool, string, error) {
		w, err := bench.ScrapeWrites(ctx, testCluster.RESTConfig)
		if err != nil {
			return false, "", err
		}
		var s float64
		if still != nil {
			if s, err = still(ctx); err != nil {
				return false, "", err
			}
		}
		n := w.Controller() + w.Endpoints()
		if !capped && last != nil && n != lastN && time.Since(began) > quietCap {
			capped = true
			b.t.Logf("the apiserver's writes did not stand still within %s (last: %s); no longer waiting for them", quietCap, w.Minus(last).WithoutLifecycle())
		}
		if last == nil || (n != lastN && !capped) || s != lastStill {
			msg := fmt.Sprintf("the apiserver's writes since the last look, the pod lifecycle's left out: %s; the other count: %v more", w.Minus(last).WithoutLifecycle(), s-lastStill)
			last, lastN, lastStill, since = w, n, s, time.Now()
			return false, msg, nil
		}
		last, lastN = w, n
		return time.Since(since) >= 2*write.StatusBatch, "", nil
	})
	return last
}

// quietCap bounds how long quiet waits for the apiserver's writes to stand
// still.
const quietCap = 2 * time.Minute

// scaleDeployments are Deployments, rolled by kube-controller-manager.
type scaleDeployments struct {
	ns   string
	pods int
}

func (d *scaleDeployments) namespace() string { return d.ns }

func (d *scaleDeployments) create(ctx context.Context, name string) error {
	return testCluster.Client.Create(ctx, bench.NewDeployment(d.ns, name, d.pods, scaleStrategy, scaleTemplate()))
}

func (d *scaleDeployments) roll(ctx context.Context, name string) error {
	// the controller writes status meanwhile: read again on a conflict
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur appsv1.Deployment
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: name}, &cur); err != nil {
			return err
		}
		bench.RetagPod(&cur.Spec.Template.Spec, "v2")
		return testCluster.Client.Update(ctx, &cur)
	})
}

func (d *scaleDeployments) remove(ctx context.Context, name string) error {
	return testCluster.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name}})
}

func (d *scaleDeployments) rolledOut(ctx context.Context, sets int, tag string) (bool, string, error) {
	var list appsv1.DeploymentList
	if err := testCluster.Client.List(ctx, &list, client.InNamespace(d.ns)); err != nil {
		return false, "", err
	}
	done := 0
	for i := range list.Items {
		if dep := &list.Items[i]; dep.Spec.Template.Spec.Containers[0].Image == scaleImage+":"+tag && bench.DeploymentRolledOut(dep, d.pods) {
			done++
		}
	}
	return done == sets, fmt.Sprintf("%d of %d Deployments rolled out at %s", done, sets, tag), nil
}

// scaleSets are PodCliqueSets of one clique, rolled by Lockstep.
type scaleSets struct {
	ns      string
	pods    int
	peerDNS v1alpha1.PeerDNS
	surge   v1alpha1.SurgePlacement
	// from is each PodCliqueSet's update revision before its roll.
	from map[string]string
}

func (s *scaleSets) namespace() string { return s.ns }

func (s *scaleSets) create(ctx context.Context, name string) error {
	pcs := bench.NewPodCliqueSet(s.ns, name, s.pods, scaleStrategy, "", scaleTemplate())
	pcs.Spec.Template.Cliques[0].PeerDNS = s.peerDNS
	pcs.Spec.SurgePlacement = s.surge
	return testCluster.Client.Create(ctx, pcs)
}

func (s *scaleSets) roll(ctx context.Context, name string) error {
	// the controller writes status meanwhile: read again on a conflict
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.PodCliqueSet
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &cur); err != nil {
			return err
		}
		s.from[name] = cur.Status.UpdateRevision
		bench.RetagImages(&cur.Spec, "v2")
		return testCluster.Client.Update(ctx, &cur)
	})
}

func (s *scaleSets) remove(ctx context.Context, name string) error {
	return testCluster.Client.Delete(ctx, &v1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}})
}

func (s *scaleSets) rolledOut(ctx context.Context, sets int, tag string) (bool, string, error) {
	var list v1alpha1.PodCliqueSetList
	if err := testCluster.Client.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
		return false, "", err
	}
	var cliques v1alpha1.PodCliqueList
	if err := testCluster.Client.List(ctx, &cliques, client.InNamespace(s.ns)); err != nil {
		return false, "", err
	}
	byName := map[string]*v1alpha1.PodClique{}
	for i := range cliques.Items {
		byName[cliques.Items[i].Name] = &cliques.Items[i]
	}
	done := 0
	for i := range list.Items {
		pcs := &list.Items[i]
		pclq := byName[naming.PodClique(pcs.Name, 0, bench.Clique)]
		if pclq != nil && pcs.Spec.Template.Cliques[0].Template.Spec.Containers[0].Image == scaleImage+":"+tag &&
			bench.PodCliqueSetRolledOut(pcs, pclq, s.pods, s.from[pcs.Name]) {
			done++
		}
	}
	return done == sets, fmt.Sprintf("%d of %d PodCliqueSets rolled out at %s", done, sets, tag), nil
}

// eventuallyState polls cond until it holds, failing the test with the last
// state cond described after timeout. API errors are retried.
func eventuallyState(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) {
	t.Helper()
	began, told := time.Now(), time.Now()
	testenv.Eventually(t, what, timeout, func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		ok, state, err := cond(ctx)
		if err != nil {
			state = err.Error()
		}
		if !ok && time.Since(told) >= time.Minute { // a long phase shows where it is
			t.Logf("%s, %s in: %s", what, time.Since(began).Round(time.Second), state)
			told = time.Now()
		}
		return ok && err == nil, state
	})
}

// envDuration reads a duration from an env variable, def when unset.
// envChoice reads an enum from the environment: def when unset, else one of
// def and others, or the test fails naming the values it takes.
func envChoice[T ~string](t *testing.T, name string, def T, others ...T) T {
	t.Helper()
	allowed := append([]T{def}, others...)
	v := T(os.Getenv(name))
	switch {
	case v == "":
		return def
	case slices.Contains(allowed, v):
		return v
	}
	t.Fatalf("%s=%q: want one of %v", name, v, allowed)
	return def
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// envInt reads a positive number from an env variable, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// operatorScrape is what the operator's /metrics say at one moment.
type operatorScrape struct {
	// writes counts the operator's requests that change state (not GET, LIST,
	// WATCH), from client-go's rest_client_requests_total.
	writes float64
	// byResource is the same writes by resource, from the operator's
	// lockstep_client_writes_total; eventWrites their Events' share.
	byResource  bench.Writes
	eventWrites float64
	// recorded counts the Events its controllers recorded
	// (lockstep_events_recorded_total); client-go writes them later.
	recorded float64
	// cpu is process_cpu_seconds_total.
	cpu       float64
	reconcile histogram
	// requests is how long its writes took, send to response
	// (rest_client_request_duration_seconds); throttled how long its
	// requests waited for its own rate limit first.
	requests, throttled histogram
	// podWrites are its pod writes by verb (lockstep_client_writes_total):
	// what went through its pods' rate-limit bucket. failed are its writes
	// that did not succeed, by method and code (rest_client_requests_total:
	// the apiserver's error code, or "<error>" when no answer came): each
	// took its place in a bucket all the same.
	podWrites, failed counts
}

// counts are counters by a label's value.
type counts map[string]float64

func (c counts) String() string {
	if len(c) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(c))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, c[k])
	}
	return strings.Join(parts, ", ")
}

// histogram is a latency histogram summed over its series (every controller,
// every verb kept): cumulative counts by upper bound.
type histogram map[float64]float64

func (h histogram) minus(earlier histogram) histogram {
	out := histogram{}
	for le, n := range h {
		out[le] = n - earlier[le]
	}
	return out
}

// quantile is the upper bound of the bucket holding quantile q (NaN when
// empty): a bucket's bound, as precise as the buckets are.
func (h histogram) quantile(q float64) float64 {
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || h[bounds[len(bounds)-1]] == 0 {
		return math.NaN()
	}
	want := q * h[bounds[len(bounds)-1]]
	for _, le := range bounds {
		if h[le] >= want {
			return le
		}
	}
	return math.Inf(1)
}

func fmtSeconds(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("≤ %s", time.Duration(s*float64(time.Second)))
}

func scrapeOperator(ctx context.Context) (operatorScrape, error) {
	body, err := testOperator.metrics(ctx)
	if err != nil {
		return operatorScrape{}, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return operatorScrape{}, fmt.Errorf("parsing the operator's metrics: %w", err)
	}
	s := operatorScrape{
		reconcile: sumHistograms(families, "controller_runtime_reconcile_time_seconds", nil),
		requests:  sumHistograms(families, "rest_client_request_duration_seconds", isWriteVerb),
		throttled: sumHistograms(families, "rest_client_rate_limiter_duration_seconds", nil),
	}
	s.failed = counts{}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		l := labelsOf(m)
		if l["method"] == http.MethodGet {
			continue
		}
		s.writes += m.GetCounter().GetValue()
		if code := l["code"]; code == "" || code[0] != '2' {
			s.failed[l["method"]+" "+code] += m.GetCounter().GetValue()
		}
	}
	s.byResource, s.podWrites = bench.Writes{}, counts{}
	for _, m := range families["lockstep_client_writes_total"].GetMetric() {
		l := labelsOf(m)
		s.byResource[l["resource"]] += m.GetCounter().GetValue()
		if l["resource"] == "pods" {
			s.podWrites[l["verb"]] += m.GetCounter().GetValue()
		}
	}
	s.eventWrites = s.byResource.Events()
	if f, ok := families["lockstep_events_recorded_total"]; ok {
		for _, m := range f.GetMetric() {
			s.recorded += m.GetCounter().GetValue()
		}
	}
	if f, ok := families["process_cpu_seconds_total"]; ok && len(f.GetMetric()) > 0 {
		s.cpu = f.GetMetric()[0].GetCounter().GetValue()
	}
	return s, nil
}

// isWriteVerb keeps the series of requests that change state.
func isWriteVerb(labels map[string]string) bool { return bench.IsWriteVerb(labels["verb"]) }

// sumHistograms adds up the series of a histogram family that keep accepts
// (every series when keep is nil).
func sumHistograms(families map[string]*dto.MetricFamily, name string, keep func(labels map[string]string) bool) histogram {
	h := histogram{}
	f, ok := families[name]
	if !ok {
		return h
	}
	for _, m := range f.GetMetric() {
		if keep != nil && !keep(labelsOf(m)) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return h
}

// labelsOf is a series' labels by name.
func labelsOf(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// scrapeAPIServerWrites is the apiserver's own latency of every write it
// served, whoever sent it: what a reconcile that writes cannot beat.
func scrapeAPIServerWrites(ctx context.Context) (histogram, error) {
	families, err := bench.ScrapeAPIServer(ctx, testCluster.RESTConfig)
	if err != nil {
		return nil, err
	}
	return sumHistograms(families, "apiserver_request_duration_seconds", isWriteVerb), nil
}
