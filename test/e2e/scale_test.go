//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
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
)

// Many PodCliqueSets of one clique each are created, rolled (25%/25%) and
// deleted together; the operator's own metrics give its writes, CPU seconds and
// reconcile latency, /proc its peak RSS. The figures are printed, not
// asserted (speed is measured, not tested); the test asserts that every phase
// finishes and that a settled cluster gets no write from the operator.
func TestBench_Scale(t *testing.T) {
	sets, pods := envInt(t, envScaleSets, 2), envInt(t, envScalePods, 10)
	idle := envDuration(t, envScaleIdle, 5*time.Second)
	phaseTimeout := envDuration(t, envScalePhaseTimeout, 30*time.Minute)
	ctx := t.Context()
	// Each simulated node takes 1000 pods; leave room for the surge.
	if err := testCluster.SetNodes(ctx, max(2, (sets*pods*5/4+999)/1000)); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "scale")
	total := sets * pods
	start, err := scrapeOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	startServed, err := scrapeAPIServerWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	phases := []struct {
		name string
		took time.Duration
	}{}
	// report prints the phases done and the operator's figures since start;
	// a run that fails still tells what it measured.
	report := func(ctx context.Context, settled string) {
		end, err := scrapeOperator(ctx)
		if err != nil {
			t.Errorf("reading the operator's metrics: %v", err)
			return
		}
		endServed, err := scrapeAPIServerWrites(ctx)
		if err != nil {
			t.Errorf("reading the apiserver's metrics: %v", err)
			return
		}
		rss, err := testOperator.currentPeakRSS()
		if err != nil {
			t.Errorf("reading the operator's peak RSS: %v", err)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d PodCliqueSets × %d pods (%d pods):\n", sets, pods, total)
		for _, p := range phases {
			fmt.Fprintf(&b, "  %-62s %8.1f s\n", p.name, p.took.Seconds())
		}
		rec := end.reconcile.minus(start.reconcile)
		p50, p99 := rec.quantile(0.5), rec.quantile(0.99)
		fmt.Fprintf(&b, "  reconcile latency (every controller)  p50 %s  p99 %s\n", fmtSeconds(p50), fmtSeconds(p99))
		// What a reconcile's time is made of: its writes' round trips, and
		// the wait for the client's own rate limit before them.
		req, wait := end.requests.minus(start.requests), end.throttled.minus(start.throttled)
		served := endServed.minus(startServed)
		fmt.Fprintf(&b, "  operator write latency  p50 %s  p99 %s; wait for its rate limit (every request)  p50 %s  p99 %s\n",
			fmtSeconds(req.quantile(0.5)), fmtSeconds(req.quantile(0.99)), fmtSeconds(wait.quantile(0.5)), fmtSeconds(wait.quantile(0.99)))
		fmt.Fprintf(&b, "  apiserver latency of every write it served (kwok, scheduler, controllers, operator)  p50 %s  p99 %s\n",
			fmtSeconds(served.quantile(0.5)), fmtSeconds(served.quantile(0.99)))
		fmt.Fprintf(&b, "  operator writes  %.0f (%.2f per pod created, rolled and deleted)%s\n",
			end.writes-start.writes, (end.writes-start.writes)/float64(total), settled)
		fmt.Fprintf(&b, "  operator CPU  %.1f s; peak RSS %.0f MiB\n", end.cpu-start.cpu, float64(rss)/(1<<20))
		t.Log(b.String())
	}
	finished := false
	t.Cleanup(func() {
		if !finished { // t.Context() is done by now
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			report(ctx, "; the run stopped before the settled window")
		}
	})
	phase := func(name string, act func() error, done func(context.Context) (bool, string, error)) {
		t.Helper()
		began := time.Now()
		if err := act(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		eventuallyState(t, phaseTimeout, name, done)
		phases = append(phases, struct {
			name string
			took time.Duration
		}{name, time.Since(began)})
		t.Logf("%s: %s", name, time.Since(began).Round(100*time.Millisecond))
	}

	names := make([]string, sets)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%03d", i)
	}
	cliquesAt := func(image string) func(context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			var list v1alpha1.PodCliqueList
			if err := testCluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			settled := 0
			for i := range list.Items {
				st := &list.Items[i].Status
				if st.ObservedGeneration == list.Items[i].Generation && st.Replicas == int32(pods) && st.UpdatedReplicas == int32(pods) && st.AvailableReplicas == int32(pods) &&
					list.Items[i].Spec.Template.Spec.Containers[0].Image == image {
					settled++
				}
			}
			if settled < sets {
				return false, fmt.Sprintf("%d of %d PodCliques settled on %s", settled, sets, image), nil
			}
			// and so have the PodCliqueSets, with no pod left terminating
			var setList v1alpha1.PodCliqueSetList
			if err := testCluster.Client.List(ctx, &setList, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			for i := range setList.Items {
				pcs := &setList.Items[i]
				if st := &pcs.Status; st.ObservedGeneration != pcs.Generation || st.CurrentRevision != st.UpdateRevision ||
					st.UpdatedReplicas != 1 || st.AvailableReplicas != 1 {
					return false, fmt.Sprintf("PodCliqueSet %s not settled: %+v", pcs.Name, pcs.Status), nil
				}
			}
			var podList corev1.PodList
			if err := testCluster.Client.List(ctx, &podList, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			if len(podList.Items) != total {
				return false, fmt.Sprintf("%d pods, %d wanted", len(podList.Items), total), nil
			}
			return true, "", nil
		}
	}
	phase(fmt.Sprintf("create %d PodCliqueSets × %d pods, to all ready", sets, pods), func() error {
		for _, n := range names {
			if err := testCluster.Client.Create(ctx, benchSet(ns, n, pods)); err != nil {
				return err
			}
		}
		return nil
	}, cliquesAt(scaleImage+":v1"))
	phase("roll every PodCliqueSet (25%/25%), to all updated and ready", func() error {
		for _, n := range names {
			var pcs v1alpha1.PodCliqueSet
			if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &pcs); err != nil {
				return err
			}
			pcs.Spec.Template.Cliques[0].Template.Spec.Containers[0].Image = scaleImage + ":v2"
			if err := testCluster.Client.Update(ctx, &pcs); err != nil {
				return err
			}
		}
		return nil
	}, cliquesAt(scaleImage+":v2"))

	// A settled cluster: the operator must not write at all. Settled includes
	// the status changes that only move progress, which may wait for
	// write.StatusBatch: the window starts once the operator's writes have
	// stood still for twice that.
	before, err := scrapeOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for quiet := time.Now(); time.Since(quiet) < 2*write.StatusBatch; {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		now, err := scrapeOperator(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now.writes != before.writes {
			before, quiet = now, time.Now()
		}
	}
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(idle): // the measuring window itself
	}
	after, err := scrapeOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := after.writes - before.writes; w != 0 {
		t.Errorf("the operator wrote %v times in %s of a settled cluster", w, idle)
	}

	phase("delete every PodCliqueSet, to no pod left", func() error {
		for _, n := range names {
			pcs := &v1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}
			if err := testCluster.Client.Delete(ctx, pcs); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context) (bool, string, error) {
		var list corev1.PodList
		if err := testCluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items)), nil
	})
	finished = true
	report(ctx, fmt.Sprintf("; %.0f in %s settled", after.writes-before.writes, idle))
}

const scaleImage = "lockstep-bench/scale"

// benchSet is one PodCliqueSet of one clique of pods replicas, 25%/25%.
func benchSet(ns, name string, pods int) *v1alpha1.PodCliqueSet {
	quarter := intstr.FromString("25%")
	return &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodCliqueSetSpec{
			Replicas: ptr.To[int32](1),
			Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{{
				Name: "server", Replicas: int32(pods), MinAvailable: ptr.To[int32](1),
				UpdateStrategy: &v1alpha1.ComponentUpdateStrategy{MaxSurge: &quarter, MaxUnavailable: &quarter},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{readyDelayAnnotation: "1s"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: scaleImage + ":v1"}}},
				},
			}}},
		},
	}
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
	// cpu is process_cpu_seconds_total.
	cpu       float64
	reconcile histogram
	// requests is how long its writes took, send to response
	// (rest_client_request_duration_seconds); throttled how long its
	// requests waited for its own rate limit first.
	requests, throttled histogram
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
	if f, ok := families["rest_client_requests_total"]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && l.GetValue() != http.MethodGet {
					s.writes += m.GetCounter().GetValue()
				}
			}
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
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if keep != nil && !keep(labels) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return h
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
