//go:build e2e

// Command benchhub runs the hub at the shape KubeFleet publishes (1,000
// clusters, 1,000 placements, 100 rollouts at once) on this machine and
// prints what it cost: `make bench-hub`.
//
// Three real kwok members stand for N MemberClusters: alias i is a
// MemberCluster with a kubeconfig Secret of its own holding the hub's
// kubeconfig of real member i%3+1, labelled bench-group=g<i/3>, so each
// group holds one alias of every real member. Placement j selects group
// j%groups; workload w uses placement w. A workload's member objects take its
// namespace and name, so within one placement no two aliases of a real member
// hold the same object. Every phase (N clusters) runs a fresh hub process
// with its own namespace, creates the placements and workloads, waits for
// them to settle, then rolls every workload to a new image at once and
// reports: the hub's peak RSS and CPU seconds, rounds per rollout (the
// Granted events the hub logged for it) against align.Play's waves for the
// same strategy and shares, and the hub's member-event-to-grant latency
// (lockstep_fleet_member_event_to_grant_seconds).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/test/bench"
	"github.com/lockstep-dev/lockstep/test/e2e/fleetenv"
)

const (
	realMembers = 3
	labelGroup  = "bench-group"
	labelReal   = "bench-real"
)

type options struct {
	clusters            []int
	workloads           int
	placements          int
	replicas            int
	probeInterval       time.Duration
	rolloutPoll         time.Duration
	settleTimeout       time.Duration
	rolloutTimeout      time.Duration
	keep                bool
	name                string
	memberConcurrency   int
	concurrentRounds    int
	hubQPS, memberNodes int
	readyDelay          string
	profile             bool
}

func main() {
	var o options
	var clusters string
	flag.StringVar(&clusters, "clusters", "100,1000", "MemberClusters of each phase, comma-separated")
	flag.IntVar(&o.workloads, "workloads", 100, "FederatedWorkloads rolled at once")
	flag.IntVar(&o.placements, "placements", 1000, "Placements (the first -workloads are used by the workloads)")
	flag.IntVar(&o.replicas, "replicas", 3, "replicas of each workload (one per real member)")
	flag.DurationVar(&o.probeInterval, "probe-interval", 30*time.Second, "the hub's --member-probe-interval")
	flag.DurationVar(&o.rolloutPoll, "rollout-poll", 0, "the hub's --rollout-poll (0: its default)")
	flag.IntVar(&o.memberConcurrency, "member-concurrency", 0, "the hub's --member-concurrency (0: its default)")
	flag.IntVar(&o.concurrentRounds, "concurrent-rounds", 0, "the hub's --concurrent-rounds (0: its default)")
	flag.IntVar(&o.hubQPS, "hub-qps", 200, "the hub's --kube-api-qps (burst twice that)")
	flag.IntVar(&o.memberNodes, "member-nodes", 2, "kwok nodes of each real member")
	flag.StringVar(&o.readyDelay, "ready-delay", "1s", "time from a pod's binding to Ready in the members")
	flag.DurationVar(&o.settleTimeout, "settle-timeout", 15*time.Minute, "how long the workloads may take to settle")
	flag.DurationVar(&o.rolloutTimeout, "rollout-timeout", 20*time.Minute, "how long the rollouts may take")
	flag.BoolVar(&o.keep, "keep", false, "leave the fleet running")
	flag.BoolVar(&o.profile, "profile", false, "serve the hub's pprof and save its heap when settled and after the rollout, and 60 s of CPU from the rollout's start, beside its log")
	flag.StringVar(&o.name, "fleet", "lockstep-benchhub", "kwok cluster name prefix of the fleet")
	flag.Parse()
	for _, s := range strings.Split(clusters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < realMembers {
			fmt.Fprintf(os.Stderr, "-clusters: %q is not a number of at least %d\n", s, realMembers)
			os.Exit(2)
		}
		o.clusters = append(o.clusters, n)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench-hub: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(o options) error {
	start := time.Now()
	ctx := context.Background()
	f, err := fleetenv.New(o.name)
	if err != nil {
		return err
	}
	if err := f.Script(ctx, "fleet-down.sh"); err != nil {
		return err
	}
	defer func() {
		if o.keep {
			logf("-keep: leaving fleet %s running; hub KUBECONFIG=%s", o.name, f.HubKubeconfig)
			return
		}
		if err := f.Script(context.Background(), "fleet-down.sh"); err != nil {
			logf("deleting the fleet: %v", err)
		}
	}()
	binary := filepath.Join(f.Dir, "lockstep")
	build := exec.Command("go", "build", "-o", binary, "./cmd/lockstep")
	build.Dir = f.Root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building lockstep: %w\n%s", err, out)
	}
	if err := f.Script(ctx, "fleet-up.sh", fmt.Sprintf("MEMBERS=%d", realMembers), fmt.Sprintf("MEMBER_NODES=%d", o.memberNodes),
		"READY_DELAY="+o.readyDelay, "READY_JITTER=0", "DELETE_DELAY=500ms"); err != nil {
		return err
	}
	if f.Hub, err = f.Client(f.HubKubeconfig); err != nil {
		return err
	}
	reals := make([]client.Client, realMembers)
	kubeconfigs := make([][]byte, realMembers)
	for i := range realMembers {
		short := fmt.Sprintf("m%d", i+1)
		if reals[i], err = f.Client(f.MemberKubeconfig(short)); err != nil {
			return err
		}
		if kubeconfigs[i], err = os.ReadFile(filepath.Join(f.Dir, short+".hub.kubeconfig")); err != nil {
			return err
		}
		// Only the aliases are MemberClusters of the bench.
		mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: short}}
		if err := f.Hub.Delete(ctx, mc); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	logf("fleet up in %s: hub and %d real members", time.Since(start).Round(time.Second), realMembers)

	var results []result
	for _, n := range o.clusters {
		r, err := phase(ctx, o, f, binary, reals, kubeconfigs, n)
		if err != nil {
			return fmt.Errorf("phase of %d clusters: %w", n, err)
		}
		results = append(results, r)
		printResults(o, results)
	}
	logf("bench-hub done in %s", time.Since(start).Round(time.Second))
	return nil
}

type result struct {
	clusters, workloads, placements int
	connect, settle, rollout        time.Duration
	peakRSS                         int64 // bytes
	cpuPhase, cpuRollout            float64
	rounds, ideal                   []int
	ratio                           []float64
	within                          int // rollouts within 1.5x the ideal rounds
	completed                       int
	p50, p99                        float64
	samples                         float64
	// where a grant's time goes: the rounds' wait in the controller's queue
	// and their own duration
	queueP50, queueP99, roundP50, roundP99 float64
	// machine is the CPU the machine's parts used over the rollout.
	machine cpuSample
	// roundsRun are the FederatedWorkload rounds over the rollout, grants
	// those of them that changed grants (the Granted events logged).
	roundsRun, grants float64
	// queueOver1s is the share of rounds that waited over 1 s in the queue:
	// its histogram's buckets go by tenfold steps (1 s, 10 s), so its
	// quantiles above 1 s are only somewhere in between
	queueOver1s float64
}

func phase(ctx context.Context, o options, f *fleetenv.Fleet, binary string, reals []client.Client, kubeconfigs [][]byte, n int) (result, error) {
	res := result{clusters: n, workloads: o.workloads, placements: o.placements}
	ns := fmt.Sprintf("bench-%d", n)
	groups := n / realMembers
	logf("phase %d clusters: %d aliases in %d groups, %d placements, %d workloads in namespace %s", n, n, groups, o.placements, o.workloads, ns)
	if err := f.Namespace(ctx, ns); err != nil {
		return res, err
	}
	// Aliases beyond n (a smaller phase after a larger one) would only
	// cost; make exactly 0..n-1.
	if err := ensureAliases(ctx, f.Hub, kubeconfigs, n); err != nil {
		return res, err
	}
	hub, err := startHub(ctx, o, f, binary, n)
	if err != nil {
		return res, err
	}
	defer hub.stop()
	t0 := time.Now()
	if err := waitFor(ctx, 10*time.Minute, fmt.Sprintf("%d MemberClusters Ready", n), func() (bool, string, error) {
		var list fleetv1alpha1.MemberClusterList
		if err := f.Hub.List(ctx, &list, client.HasLabels{labelGroup}); err != nil {
			return false, "", err
		}
		ready := 0
		for _, mc := range list.Items {
			if meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)) {
				ready++
			}
		}
		return ready >= n, fmt.Sprintf("%d/%d ready", ready, n), nil
	}); err != nil {
		return res, err
	}
	res.connect = time.Since(t0)
	logf("  %d MemberClusters Ready in %s", n, res.connect.Round(time.Second))

	t0 = time.Now()
	for j := range o.placements {
		pl := &fleetv1alpha1.Placement{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%d", j)},
			Spec: fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{labelGroup: fmt.Sprintf("g%d", j%groups)}}},
		}
		if err := f.Hub.Create(ctx, pl); err != nil && !apierrors.IsAlreadyExists(err) {
			return res, fmt.Errorf("creating Placement %s: %w", pl.Name, err)
		}
	}
	for w := range o.workloads {
		mu, ms := intstr.FromInt32(1), intstr.FromInt32(1)
		fw := &fleetv1alpha1.FederatedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("fw-%d", w)},
			Spec: fleetv1alpha1.FederatedWorkloadSpec{
				PlacementRef:    fleetv1alpha1.PlacementReference{Name: fmt.Sprintf("p-%d", w%o.placements)},
				Replicas:        int32(o.replicas),
				Template:        template(fmt.Sprintf("fw-%d", w), "bench:1"),
				RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms},
			},
		}
		if err := f.Hub.Create(ctx, fw); err != nil && !apierrors.IsAlreadyExists(err) {
			return res, fmt.Errorf("creating FederatedWorkload %s: %w", fw.Name, err)
		}
	}
	if err := waitFor(ctx, o.settleTimeout, "the workloads settled", func() (bool, string, error) {
		done, _, err := settled(ctx, f.Hub, ns, 1)
		return done == o.workloads, fmt.Sprintf("%d/%d settled", done, o.workloads), err
	}); err != nil {
		return res, err
	}
	res.settle = time.Since(t0)
	logf("  placements and workloads created and settled in %s", res.settle.Round(time.Second))

	hub.saveProfile(n, "heap", "settled-heap")
	hub.saveProfile(n, "goroutine", "settled-goroutine")
	before, err := scrape(hub.metricsURL)
	if err != nil {
		return res, err
	}
	cpu0, err := sampleCPU(f.Dir, hub.pid())
	if err != nil {
		return res, err
	}
	logOffset, err := fileSize(hub.logPath)
	if err != nil {
		return res, err
	}
	// Every workload to the new image, as fast as the hub's apiserver takes it.
	t0 = time.Now()
	cpuProfile := make(chan struct{})
	go func() { defer close(cpuProfile); hub.saveProfile(n, "profile?seconds=60", "rollout-cpu") }()
	for w := range o.workloads {
		var fw fleetv1alpha1.FederatedWorkload
		key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("fw-%d", w)}
		patch := map[string]any{"spec": map[string]any{"template": template(key.Name, "bench:2")}}
		raw, _ := json.Marshal(patch)
		fw.Namespace, fw.Name = key.Namespace, key.Name
		if err := f.Hub.Patch(ctx, &fw, client.RawPatch("application/merge-patch+json", raw)); err != nil {
			return res, fmt.Errorf("rolling %s: %w", key.Name, err)
		}
	}
	var final []fleetv1alpha1.FederatedWorkload
	if err := waitFor(ctx, o.rolloutTimeout, "the rollouts complete", func() (bool, string, error) {
		done, items, err := settled(ctx, f.Hub, ns, 2)
		final = items
		return done == o.workloads, fmt.Sprintf("%d/%d complete", done, o.workloads), err
	}); err != nil {
		logf("  %v", err)
	}
	res.rollout = time.Since(t0)
	res.completed, _, _ = settled(ctx, f.Hub, ns, 2)
	hub.saveProfile(n, "heap", "rollout-heap")
	<-cpuProfile
	logf("  %d/%d rollouts complete in %s", res.completed, o.workloads, res.rollout.Round(time.Second))

	cpu1, err := sampleCPU(f.Dir, hub.pid())
	if err != nil {
		return res, err
	}
	res.cpuRollout = cpu1.hub - cpu0.hub
	res.cpuPhase = cpu1.hub
	res.machine = cpu1.minus(cpu0)
	res.peakRSS = int64(cpu1.hubPeakRSS)
	after, err := scrape(hub.metricsURL)
	if err != nil {
		return res, err
	}
	res.p50, res.p99, res.samples = quantiles(before, after, "lockstep_fleet_member_event_to_grant_seconds")
	const fw = `controller="federatedworkload"`
	var queued float64
	res.queueP50, res.queueP99, queued = quantiles(before, after, "workqueue_queue_duration_seconds", fw)
	if within, ok := bucketCount(before, after, "workqueue_queue_duration_seconds", "1", fw); ok && queued > 0 {
		res.queueOver1s = 1 - within/queued
	}
	res.roundP50, res.roundP99, res.roundsRun = quantiles(before, after, "controller_runtime_reconcile_time_seconds", fw)
	granted, err := grantedRounds(hub.logPath, logOffset)
	if err != nil {
		return res, err
	}
	for i := range final {
		fw := &final[i]
		got := granted[fw.Namespace+"/"+fw.Name]
		ideal, err := idealRounds(fw)
		if err != nil {
			return res, err
		}
		res.rounds, res.ideal = append(res.rounds, got), append(res.ideal, ideal)
		res.grants += float64(got)
		ratio := float64(got) / float64(max(ideal, 1))
		res.ratio = append(res.ratio, ratio)
		if ratio <= 1.5 {
			res.within++
		}
	}
	hub.stop()
	cleanup(ctx, f.Hub, reals, ns)
	return res, nil
}

// template is a Deployment running image.
func template(app, image string) runtime.RawExtension {
	labels := map[string]any{"app": app}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}},
		},
	}})
	return runtime.RawExtension{Raw: raw}
}

// settled counts the workloads at rest on generation gen of their spec:
// observed, rollout complete, every replica updated and available.
func settled(ctx context.Context, hub client.Client, ns string, gen int64) (int, []fleetv1alpha1.FederatedWorkload, error) {
	var list fleetv1alpha1.FederatedWorkloadList
	if err := hub.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, nil, err
	}
	done := 0
	for _, fw := range list.Items {
		p := meta.FindStatusCondition(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
		if fw.Generation >= gen && fw.Status.ObservedGeneration == fw.Generation && p != nil &&
			p.Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) &&
			fw.Status.UpdatedReplicas == fw.Spec.Replicas && fw.Status.AvailableReplicas == fw.Spec.Replicas && fw.Status.Replicas == fw.Spec.Replicas {
			done++
		}
	}
	return done, list.Items, nil
}

// idealRounds is the number of rounds that change grants when the workload
// rolls over its members' shares with its strategy as align.Play plays it:
// each wave one round of grants, and the round after the last wave when it
// still changes a grant. Play stops once the plan is done, but the hub's
// round that sees it done still writes the grants that freeze the finished
// members (a Deployment done with its share is paused), and logs it as
// Granted like any other: the count the ideal is compared with.
func idealRounds(fw *fleetv1alpha1.FederatedWorkload) (int, error) {
	var sims []*align.SimMember
	for _, c := range fw.Status.Clusters {
		sims = append(sims, align.NewSimMember(c.Name, align.Deployment, c.DesiredReplicas))
	}
	strategy := member.StrategyOf(fw)
	waves, done, err := align.Play(strategy, sims, 1000)
	if err != nil {
		return 0, err
	}
	if !done {
		return 0, fmt.Errorf("align.Play did not finish the rollout of %s", fw.Name)
	}
	ms := make([]align.Member, 0, len(sims))
	written := map[string]*align.Grant{}
	for _, s := range sims {
		ms = append(ms, s.Member())
		written[s.Name] = s.Written
	}
	last, err := align.Align(strategy, ms)
	if err != nil {
		return 0, err
	}
	for _, mp := range last.Members {
		if w := written[mp.Name]; w == nil || *w != mp.Grant {
			return len(waves) + 1, nil
		}
	}
	return len(waves), nil
}

func ensureAliases(ctx context.Context, hub client.Client, kubeconfigs [][]byte, n int) error {
	for i := range n {
		r := i % realMembers
		name := fmt.Sprintf("alias-%d", i)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleetenvFleetNamespace, Name: name},
			Data: map[string][]byte{"kubeconfig": kubeconfigs[r]}}
		if err := hub.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				labelGroup: fmt.Sprintf("g%d", i/realMembers), labelReal: fmt.Sprintf("m%d", r+1)}},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: fleetenvFleetNamespace, Name: name, Key: "kubeconfig"}},
		}
		if i/realMembers >= n/realMembers {
			// an incomplete group: selected by no placement
			mc.Labels[labelGroup] = "none"
		}
		if err := hub.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating MemberCluster %s: %w", name, err)
		}
	}
	return nil
}

const fleetenvFleetNamespace = "lockstep-fleet"

// cleanup deletes the phase's workloads without waiting for the hub (gone
// already), and their member objects in the real members.
func cleanup(ctx context.Context, hub client.Client, reals []client.Client, ns string) {
	var list fleetv1alpha1.FederatedWorkloadList
	if err := hub.List(ctx, &list, client.InNamespace(ns)); err == nil {
		for i := range list.Items {
			fw := &list.Items[i]
			if len(fw.Finalizers) > 0 {
				_ = hub.Patch(ctx, fw, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
			}
		}
	}
	_ = hub.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, m := range reals {
		_ = m.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
}

// hubProcess is `lockstep hub` running as its own process.
type hubProcess struct {
	cmd                 *exec.Cmd
	logPath, metricsURL string
	// pprofURL is the hub's pprof index with -profile, else "".
	pprofURL string
	exited   chan struct{}
}

// saveProfile writes the hub's pprof profile (e.g. "heap",
// "profile?seconds=60") beside its log as hub-<n>-<name>.pprof; nothing
// without -profile.
func (h *hubProcess) saveProfile(n int, profile, name string) {
	if h.pprofURL == "" {
		return
	}
	resp, err := http.Get(h.pprofURL + profile)
	if err != nil {
		logf("  profile %s: %v", name, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	path := filepath.Join(filepath.Dir(h.logPath), fmt.Sprintf("hub-%d-%s.pprof", n, name))
	out, err := os.Create(path)
	if err != nil {
		logf("  profile %s: %v", name, err)
		return
	}
	defer func() { _ = out.Close() }()
	if _, err := io.Copy(out, resp.Body); err != nil {
		logf("  profile %s: %v", name, err)
		return
	}
	logf("  saved %s", path)
}

func (h *hubProcess) pid() int { return h.cmd.Process.Pid }

func (h *hubProcess) stop() {
	select {
	case <-h.exited:
		return
	default:
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

func startHub(ctx context.Context, o options, f *fleetenv.Fleet, binary string, n int) (*hubProcess, error) {
	ports := make([]int, 4)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	h := &hubProcess{logPath: filepath.Join(f.Dir, fmt.Sprintf("hub-%d.log", n)),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]), exited: make(chan struct{})}
	log, err := os.Create(h.logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"hub", "--kubeconfig", f.HubKubeconfig, "--leader-elect=false", "--log-format", "json",
		"--dev-webhooks", "--webhook-cert-dir", filepath.Join(f.Dir, "hub-webhook-certs"), "--webhook-port", strconv.Itoa(ports[0]),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(ports[1]), "--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(ports[2]),
		"--member-probe-interval", o.probeInterval.String(),
		"--kube-api-qps", strconv.Itoa(o.hubQPS), "--kube-api-burst", strconv.Itoa(2 * o.hubQPS)}
	if o.profile {
		h.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", ports[3])
		args = append(args, "--pprof-bind-address", "127.0.0.1:"+strconv.Itoa(ports[3]))
	}
	if o.rolloutPoll > 0 {
		args = append(args, "--rollout-poll", o.rolloutPoll.String())
	}
	if o.memberConcurrency > 0 {
		args = append(args, "--member-concurrency", strconv.Itoa(o.memberConcurrency))
	}
	if o.concurrentRounds > 0 {
		args = append(args, "--concurrent-rounds", strconv.Itoa(o.concurrentRounds))
	}
	h.cmd = exec.Command(binary, args...)
	h.cmd.Stdout, h.cmd.Stderr = log, log
	if err := h.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, err
	}
	go func() { _ = h.cmd.Wait(); _ = log.Close(); close(h.exited) }()
	probe := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
	err = waitFor(ctx, time.Minute, "the hub ready", func() (bool, string, error) {
		select {
		case <-h.exited:
			return false, "", fmt.Errorf("the hub exited; see %s", h.logPath)
		default:
		}
		resp, err := http.Get(probe)
		if err != nil {
			return false, err.Error(), nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	if err != nil {
		h.stop()
		return nil, err
	}
	logf("  hub running (pid %d), log %s", h.pid(), h.logPath)
	return h, nil
}

// waitFor polls cond every second until it holds, it fails, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	last, lastLog := "", time.Now()
	for {
		ok, state, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if state != last || time.Since(lastLog) > 30*time.Second {
			if time.Since(lastLog) > 10*time.Second {
				logf("  waiting for %s: %s", what, state)
				lastLog = time.Now()
			}
			last = state
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (last: %s)", what, timeout, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// cpuSample is the CPU time, in seconds, the parts of the bench's machine
// have used by one moment: the hub, the hub's control plane (its apiserver,
// etcd and controller manager), the members' control planes (with kwok and
// the scheduler) and the whole machine. It tells a slow grant that waited
// on the hub from one that waited for the machine.
type cpuSample struct {
	hub, hubPlane, members, machine float64
	hubPeakRSS                      uint64
}

// sampleCPU reads the hub's process and every process kwokctl recorded for
// the fleet's clusters (<fleet dir>/<hub|mN>/kwok/clusters/*/pids).
func sampleCPU(fleetDir string, hubPID int) (cpuSample, error) {
	var s cpuSample
	hub, err := bench.ReadProc(hubPID)
	if err != nil {
		return s, err
	}
	s.hub, s.hubPeakRSS = hub.CPU, hub.PeakRSS
	pids, err := filepath.Glob(filepath.Join(fleetDir, "*", "kwok", "clusters", "*", "pids", "*.pid"))
	if err != nil {
		return s, err
	}
	for _, path := range pids {
		data, err := os.ReadFile(path)
		if err != nil {
			return s, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return s, fmt.Errorf("%s: %w", path, err)
		}
		p, err := bench.ReadProc(pid)
		if err != nil {
			return s, fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(fleetDir, path)
		if strings.HasPrefix(rel, "hub"+string(filepath.Separator)) {
			s.hubPlane += p.CPU
		} else {
			s.members += p.CPU
		}
	}
	s.machine, err = bench.MachineCPU()
	return s, err
}

// minus is the CPU used between an earlier sample and s.
func (s cpuSample) minus(earlier cpuSample) cpuSample {
	return cpuSample{hub: s.hub - earlier.hub, hubPlane: s.hubPlane - earlier.hubPlane,
		members: s.members - earlier.members, machine: s.machine - earlier.machine}
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// grantedRounds counts the Granted events the hub logged per workload
// ("namespace/name") from offset on.
func grantedRounds(path string, offset int64) (map[string]int, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	out := map[string]int{}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), `"Granted"`) {
			continue
		}
		var e struct {
			Reason, Object string
		}
		if json.Unmarshal(line, &e) == nil && e.Reason == "Granted" {
			out[e.Object]++
		}
	}
	return out, sc.Err()
}

// scrape reads the buckets of every histogram of the hub's metrics.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// quantiles are the p50 and p99 of histogram name over the scrapes'
// difference, interpolated within buckets, and its number of samples. With
// labels (`controller="federatedworkload"`), only the series that carry each
// of them count.
func quantiles(before, after map[string]float64, name string, labels ...string) (p50, p99, count float64) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := name + "_bucket{"
	for k, v := range after {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok || !hasLabels(rest, labels) {
			continue
		}
		_, leRest, ok := strings.Cut(rest, `le="`)
		if !ok {
			continue
		}
		le := math.Inf(1)
		if s, _, _ := strings.Cut(leRest, `"`); s != "+Inf" {
			le, _ = strconv.ParseFloat(s, 64)
		}
		bs = append(bs, bucket{le, v - before[k]})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return math.NaN(), math.NaN(), 0
	}
	count = bs[len(bs)-1].n
	q := func(p float64) float64 {
		rank := p * count
		lo, below := 0.0, 0.0
		for _, b := range bs {
			if b.n >= rank {
				if math.IsInf(b.le, 1) {
					return lo
				}
				if b.n == below {
					return b.le
				}
				return lo + (b.le-lo)*(rank-below)/(b.n-below)
			}
			lo, below = b.le, b.n
		}
		return lo
	}
	return q(0.5), q(0.99), count
}

// bucketCount is how many samples of histogram name fell at or below the
// bucket le between the scrapes, over the series with labels.
func bucketCount(before, after map[string]float64, name, le string, labels ...string) (float64, bool) {
	n, found := 0.0, false
	prefix := name + "_bucket{"
	for k, v := range after {
		rest, ok := strings.CutPrefix(k, prefix)
		if ok && hasLabels(rest, labels) && strings.Contains(rest, `le="`+le+`"`) {
			n, found = n+v-before[k], true
		}
	}
	return n, found
}

// hasLabels reports whether a series' label text holds every one of labels.
func hasLabels(text string, labels []string) bool {
	for _, l := range labels {
		if !strings.Contains(text, l) {
			return false
		}
	}
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func printResults(o options, rs []result) {
	fmt.Printf("\nbench-hub: %d workloads (Deployment, %d replicas, maxUnavailable 1, maxSurge 1) rolled at once, %d placements, over %d real kwok members; hub --member-probe-interval %s\n",
		o.workloads, o.replicas, o.placements, realMembers, o.probeInterval)
	fmt.Printf("%9s %10s %9s %9s %10s %10s %12s %16s %10s %12s %12s\n", "clusters", "connect", "settle", "rollout", "complete", "peak RSS", "CPU s (roll)", "rounds/ideal", "<=1.5x", "grant p50", "grant p99")
	for _, r := range rs {
		fmt.Printf("%9d %10s %9s %9s %10s %9.0fM %12s %16s %10s %12s %12s\n", r.clusters,
			r.connect.Round(time.Second), r.settle.Round(time.Second), r.rollout.Round(time.Second),
			fmt.Sprintf("%d/%d", r.completed, r.workloads), float64(r.peakRSS)/(1<<20),
			fmt.Sprintf("%.0f (%.0f)", r.cpuPhase, r.cpuRollout), roundsSummary(r), fmt.Sprintf("%d/%d", r.within, len(r.ratio)),
			fmt.Sprintf("%.0fms", r.p50*1000), fmt.Sprintf("%.0fms", r.p99*1000))
	}
	for _, r := range rs {
		fmt.Printf("%d clusters, where a grant's time goes (FederatedWorkload rounds over the rollout): wait in the queue p50 %.0fms p99 %.0fms (%.0f%% over 1 s; its buckets are 1 s and 10 s apart); a round itself p50 %.0fms p99 %.0fms; %.0f rounds, %.0f of them granted\n",
			r.clusters, r.queueP50*1000, r.queueP99*1000, r.queueOver1s*100, r.roundP50*1000, r.roundP99*1000, r.roundsRun, r.grants)
	}
	for _, r := range rs {
		capacity := float64(goruntime.NumCPU()) * r.rollout.Seconds()
		m := r.machine
		fmt.Printf("%d clusters, the machine's CPU over the rollout (%d CPUs, %s): %.0f%% busy; the hub %.0f%%, the hub's apiserver, etcd and controller manager %.0f%%, the %d members' control planes and kwok %.0f%%, the rest (the bench, other processes) %.0f%%\n",
			r.clusters, goruntime.NumCPU(), r.rollout.Round(time.Second), 100*m.machine/capacity, 100*m.hub/capacity, 100*m.hubPlane/capacity,
			realMembers, 100*m.members/capacity, 100*(m.machine-m.hub-m.hubPlane-m.members)/capacity)
	}
	fmt.Println("targets: every rollout within 1.5x its ideal rounds; member-event-to-grant p99 under 2s; hub RSS under 2 GB")
}

func roundsSummary(r result) string {
	if len(r.rounds) == 0 {
		return "-"
	}
	rounds, ideal, ratio := slices.Clone(r.rounds), slices.Clone(r.ideal), slices.Clone(r.ratio)
	slices.Sort(rounds)
	slices.Sort(ideal)
	slices.Sort(ratio)
	return fmt.Sprintf("%d/%d (max %.2fx)", rounds[len(rounds)/2], ideal[len(ideal)/2], ratio[len(ratio)-1])
}
