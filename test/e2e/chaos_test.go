//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// Chaos tests: rollouts of every update strategy run under the invariant
// monitor while the world around the operator breaks: the apiserver or etcd
// restarts, the scheduler is gone, another writer edits or deletes what the
// operator made, a node goes with pods on it or turns NotReady, new pods
// crash, the operator's connection to the apiserver is cut, and the spec
// changes while a fault is active. Each fault is injected at a seeded random
// moment of a rollout (crashRand, LOCKSTEP_E2E_SEED), checked to have taken
// effect, and cleared; then the rollout must finish with no invariant ever
// broken.
//
// LOCKSTEP_CHAOS_RUNS is how many times each fault is injected. Run r of
// fault f goes to strategy (f+r) mod the number of strategies, so 1 spreads
// the faults over the strategies (the short version, in make test-e2e) and 6
// injects every fault into every strategy once; `make chaos` runs five such
// runs side by side with five seeds (hack/chaos.sh). A control-plane
// component that exits on its own meanwhile (the kube-scheduler does, on a
// corrupted cache after an apiserver restart) is started again by the
// supervisor TestMain runs, and the rollout's notes say so.

// envChaosRuns names the variable that sets the injections per fault;
// envChaosResults, when set, a file the results table is written to as
// tab-separated values.
// envChaosFaults and envChaosStrategies, regular expressions, keep only the
// faults and the strategies whose names match them.
const (
	envChaosRuns       = "LOCKSTEP_CHAOS_RUNS"
	envChaosResults    = "LOCKSTEP_CHAOS_RESULTS"
	envChaosFaults     = "LOCKSTEP_CHAOS_FAULTS"
	envChaosStrategies = "LOCKSTEP_CHAOS_STRATEGIES"
)

func chaosRuns(t *testing.T) int {
	t.Helper()
	return envInt(t, envChaosRuns, 1)
}

// chaosStrategy is one update strategy and the small PodCliqueSet it rolls.
type chaosStrategy struct {
	name  string
	nodes int
	pcs   func(t *testing.T) *v1alpha1.PodCliqueSet
	// partition: each rollout starts held at partition 1 and the test lowers
	// it to 0 once the operator reports PartitionReached.
	partition bool
	// onDelete: the test deletes the outdated pods itself.
	onDelete bool
}

// surgingDisaggregated is disaggregated.yaml at one replica of a 2-pod
// frontend and 2 replicas of each group (a leader and a worker), every role
// surging.
func surgingDisaggregated(t *testing.T) *v1alpha1.PodCliqueSet {
	pcs := withReplicas(loadExampleAsApplied(t, "disaggregated.yaml"), 1)
	tpl := &pcs.Spec.Template
	setCliqueReplicas(tpl, "frontend", 2)
	tpl.Clique("frontend").UpdateStrategy = noUnavailable()
	setCliqueReplicas(tpl, "prefill-worker", 1)
	setCliqueReplicas(tpl, "decode-worker", 1)
	for i := range tpl.PodCliqueScalingGroups {
		tpl.PodCliqueScalingGroups[i].UpdateStrategy = noUnavailable()
	}
	return pcs
}

// noUnavailable is maxUnavailable 0, maxSurge 1: a role surges to update.
func noUnavailable() *v1alpha1.ComponentUpdateStrategy {
	return &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: new(intstr.FromInt32(0)), MaxSurge: new(intstr.FromInt32(1))}
}

// setCliqueReplicas makes an example's clique smaller; its gang minimum
// (defaulted to the old size) shrinks with it.
func setCliqueReplicas(tpl *v1alpha1.PodCliqueSetTemplateSpec, clique string, n int32) {
	c := tpl.Clique(clique)
	c.Replicas = n
	if c.MinAvailable != nil && *c.MinAvailable > n {
		c.MinAvailable = new(n)
	}
}

// chaosStrategies are the examples made small enough that a rollout takes
// seconds.
var chaosStrategies = []chaosStrategy{{
	// disaggregated.yaml at one replica of a 2-pod frontend and 2 replicas of
	// each group (a leader and a worker), every role surging.
	name:  "RollingUpdate+surge",
	nodes: 3,
	pcs:   surgingDisaggregated,
}, {
	// The same, each surge pod of the frontend starting at the index of the
	// pod it replaces (surgePlacement ReplacedIndex).
	name:  "RollingUpdate+surge at the replaced index",
	nodes: 3,
	pcs: func(t *testing.T) *v1alpha1.PodCliqueSet {
		pcs := surgingDisaggregated(t)
		pcs.Spec.SurgePlacement = v1alpha1.ReplacedIndex
		return pcs
	},
}, {
	// disaggregated-recreate-surge.yaml (ReplicaRecreate, maxSurge 1,
	// maxUnavailable 0) with one worker per group.
	name:  "ReplicaRecreate+surge",
	nodes: 3,
	pcs: func(t *testing.T) *v1alpha1.PodCliqueSet {
		pcs := loadExampleAsApplied(t, "disaggregated-recreate-surge.yaml")
		setCliqueReplicas(&pcs.Spec.Template, "prefill-worker", 1)
		setCliqueReplicas(&pcs.Spec.Template, "decode-worker", 1)
		return pcs
	},
}, {
	// role-ordered-pd.yaml at one replica.
	name:  "RoleSteps",
	nodes: 3,
	pcs: func(t *testing.T) *v1alpha1.PodCliqueSet {
		return withReplicas(loadExampleAsApplied(t, "role-ordered-pd.yaml"), 1)
	},
}, {
	// single-node-aggregated.yaml at 2 replicas without GPUs, partition 1.
	name:      "Partition",
	nodes:     2,
	partition: true,
	pcs: func(t *testing.T) *v1alpha1.PodCliqueSet {
		pcs := withoutGPUs(withReplicas(loadExampleAsApplied(t, "single-node-aggregated.yaml"), 2))
		pcs.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: new(int32(1))}
		return pcs
	},
}, {
	// The OnDelete test's PodCliqueSet with 3 workers and one shard.
	name:     "OnDelete",
	nodes:    2,
	onDelete: true,
	pcs: func(t *testing.T) *v1alpha1.PodCliqueSet {
		pcs := parsePCS(t, onDeletePCS)
		setCliqueReplicas(&pcs.Spec.Template, "worker", 3)
		pcs.Spec.Template.PodCliqueScalingGroups[0].Replicas = 1
		return pcs
	},
}}

// chaosFault is one fault: inject makes it happen during the rollout r, checks
// that it took effect, and clears it, noting what it saw in r.
type chaosFault struct {
	name   string
	inject func(r *chaosRollout) error
}

var chaosFaults = []chaosFault{
	{"kube-apiserver restart", injectComponentRestart("kube-apiserver")},
	{"etcd restart", injectComponentRestart("etcd")},
	{"kube-scheduler down", injectSchedulerOutage(false)},
	{"writer: PodClique replicas edited", injectPodCliqueScaled},
	{"writer: PodClique deleted", injectPodCliqueDeleted},
	{"writer: PodGroup deleted", injectPodGroupDeleted},
	{"writer: pod relabelled", injectPodRelabelled},
	{"node deleted with pods", injectNodeDeleted},
	{"node NotReady", injectNodeNotReady},
	{"new pods crash and recover", injectCrash(false)},
	{"operator connection cut", injectConnectionCut},
	{"leader killed, standby takes over", injectLeaderKilled},
	{"spec changed and scaled, scheduler down", injectSchedulerOutage(true)},
	{"rolled back while new pods crash", injectCrash(true)},
}

// chaosRollout is one rollout under one fault.
type chaosRollout struct {
	s     *scene
	st    *chaosStrategy
	rng   *rand.Rand
	short bool
	next  func() string // the next unused version
	// pcs is the latest spec the test wrote, version what it rolls to and from
	// what ran before.
	pcs           *v1alpha1.PodCliqueSet
	version, from string
	scaled        *bool // the scene's scale toggle (respec)
	notes         []string
	// kwokRetry, set once the apiserver is back from an outage, makes every
	// step play again the kwok stages a failed write dropped; retried holds
	// the pods already shown to kwok again (once each).
	kwokRetry bool
	retried   map[types.UID]bool
}

func (r *chaosRollout) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
	r.s.t.Logf("  "+format, args...)
}

func (r *chaosRollout) want() layout { return specLayout(&r.pcs.Spec, r.version) }

// step observes the PodCliqueSet, does what the test does for the strategy
// (lower the partition, delete outdated pods) and reports whether the
// rollout to r.version is complete.
func (r *chaosRollout) step(ctx context.Context) (bool, string, error) {
	o, err := r.s.observe(ctx)
	if err != nil {
		return false, "", err
	}
	if err := r.drive(ctx, o); err != nil {
		return false, "", err
	}
	if r.kwokRetry {
		if err := r.showStuckPodsToKwok(ctx, o.pods); err != nil {
			return false, "", err
		}
	}
	d := o.layout.diff(r.want())
	// Done once nothing is terminating either: a pod scaled in (say after
	// another writer's edit was put back) still moves the status, and the
	// end check reads it afresh.
	terminating := slices.ContainsFunc(o.pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	return d == "" && o.settled() && !terminating, o.describe() + "differences: " + d, nil
}

// drive is the test's part of a rollout: under a partition it lowers the
// partition once the operator holds there; under OnDelete it deletes every
// outdated pod (announced to the monitor).
func (r *chaosRollout) drive(ctx context.Context, o *observed) error {
	switch {
	case r.st.partition:
		ru := o.pcs.Spec.UpdateStrategy.RollingUpdate
		if ru == nil || ru.Partition == nil || *ru.Partition == 0 || !progressingIs(o.pcs, v1alpha1.ReasonPartitionReached) {
			return nil
		}
		pcs, err := r.s.tryUpdate(ctx, func(spec *v1alpha1.PodCliqueSetSpec) { spec.UpdateStrategy.RollingUpdate.Partition = new(int32(0)) })
		if err != nil {
			return err
		}
		r.pcs = pcs
	case r.st.onDelete:
		return r.deleteOutdated(ctx, o)
	}
	return nil
}

// deleteOutdated deletes, as a user of OnDelete would, every outdated unit: a
// standalone clique's pod, or a whole scaling-group replica (its member
// PodCliques: a group replica's pod deleted alone comes back on the group
// replica's template). Each deletion is announced to the monitor.
func (r *chaosRollout) deleteOutdated(ctx context.Context, o *observed) error {
	cliques, err := r.s.children(ctx)
	if err != nil {
		return err
	}
	// A pod is outdated when it runs another image, or when it does not carry
	// its PodClique's template hash (another writer changed the label): a
	// user reading each pod's revision label finds it so.
	podHash := map[string]string{}
	for i := range cliques {
		if h, err := revision.PodCliqueHash(&cliques[i]); err == nil {
			podHash[cliques[i].Name] = h
		}
	}
	groups := map[string]bool{} // PodClique names of outdated group replicas
	for i := range o.pods {
		p := &o.pods[i]
		want, known := podHash[p.Labels[v1alpha1.LabelPodClique]]
		relabelled := known && p.Labels[v1alpha1.LabelTemplateHash] != want
		if p.DeletionTimestamp != nil || (imageTag(p) == r.version && !relabelled) {
			continue
		}
		if p.Labels[v1alpha1.LabelPodCliqueScalingGroup] != "" {
			groups[groupReplicaKey(p.Labels)] = true
			continue
		}
		r.s.m.ExpectDeletion(p.Name)
		if err := testCluster.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if len(groups) == 0 {
		return nil
	}
	for i := range cliques {
		pc := &cliques[i]
		if pc.Labels[v1alpha1.LabelPodCliqueScalingGroup] == "" || !groups[groupReplicaKey(pc.Labels)] {
			continue
		}
		r.s.m.ExpectDeletionOf(labels.Set{v1alpha1.LabelPodClique: pc.Name})
		if err := testCluster.Client.Delete(ctx, pc); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// groupReplicaKey names the scaling-group replica of a pod or PodClique by its
// labels.
func groupReplicaKey(l map[string]string) string {
	return l[v1alpha1.LabelPodCliqueSetReplicaIndex] + "/" + l[v1alpha1.LabelPodCliqueScalingGroup] + "/" + l[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
}

// hold keeps a fault on for d, the monitor watching and the test driving.
func (r *chaosRollout) hold(d time.Duration) {
	r.s.t.Helper()
	_ = r.s.await("the fault's end", d, func(ctx context.Context) (bool, string, error) {
		_, state, err := r.step(ctx)
		return false, state, err
	})
}

// until polls cond (driving the rollout meanwhile) for at most timeout.
func (r *chaosRollout) until(what string, timeout time.Duration, cond func(ctx context.Context) (bool, string, error)) error {
	r.s.t.Helper()
	return r.s.await(what, timeout, func(ctx context.Context) (bool, string, error) {
		if o, err := r.s.observe(ctx); err == nil {
			if err := r.drive(ctx, o); err != nil {
				return false, "", err
			}
		}
		return cond(ctx)
	})
}

// respec changes the spec in the middle of the rollout: a newer image and a
// role scaled (out, or back in the next time).
func (r *chaosRollout) respec(ctx context.Context) error {
	version := r.next()
	delta := int32(1)
	if *r.scaled {
		delta = -1
	}
	var scaled string
	pcs, err := r.s.tryUpdate(ctx, func(spec *v1alpha1.PodCliqueSetSpec) {
		setImageTag(version)(spec)
		scaled = scaleFirstRole(spec, delta)
	})
	if err != nil {
		return err
	}
	*r.scaled = !*r.scaled
	r.note("spec changed to %s with %s", version, scaled)
	r.pcs, r.version = pcs, version
	return nil
}

// rollback puts the image back to what ran before the rollout.
func (r *chaosRollout) rollback(ctx context.Context) error {
	pcs, err := r.s.tryUpdate(ctx, setImageTag(r.from))
	if err != nil {
		return err
	}
	r.note("rolled back from %s to %s", r.version, r.from)
	r.pcs, r.version = pcs, r.from
	return nil
}

// scaleFirstRole changes the replicas of the first standalone clique by delta,
// or, when every clique is in a scaling group, those of the first group; it
// says what it did.
func scaleFirstRole(spec *v1alpha1.PodCliqueSetSpec, delta int32) string {
	grouped := map[string]bool{}
	for _, g := range spec.Template.PodCliqueScalingGroups {
		for _, c := range g.CliqueNames {
			grouped[c] = true
		}
	}
	for i := range spec.Template.Cliques {
		if c := &spec.Template.Cliques[i]; !grouped[c.Name] {
			c.Replicas += delta
			return fmt.Sprintf("clique %s at %d", c.Name, c.Replicas)
		}
	}
	g := &spec.Template.PodCliqueScalingGroups[0]
	g.Replicas += delta
	return fmt.Sprintf("scaling group %s at %d", g.Name, g.Replicas)
}

// specLayout is the layout every pod of spec running version makes.
func specLayout(spec *v1alpha1.PodCliqueSetSpec, version string) layout {
	grouped := map[string]bool{}
	for _, g := range spec.Template.PodCliqueScalingGroups {
		for _, c := range g.CliqueNames {
			grouped[c] = true
		}
	}
	units := func(n int32) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("%d=%s", i, version)
		}
		return strings.Join(parts, " ")
	}
	roles := layout{}
	for _, c := range spec.Template.Cliques {
		if !grouped[c.Name] && c.Replicas > 0 {
			roles[c.Name] = units(c.Replicas)
		}
	}
	for _, g := range spec.Template.PodCliqueScalingGroups {
		if g.Replicas > 0 {
			roles[g.Name] = units(g.Replicas)
		}
	}
	replicas := int32(1)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	return everyReplica(int(replicas), roles)
}

// chaosMidRolloutTries is how many rollouts in a row a fault is given to land
// mid-rollout before the test fails.
const chaosMidRolloutTries = 4

// chaosResult is what one rollout under one fault came to.
type chaosResult struct {
	fault, strategy string
	mid             bool // the fault began before the rollout was complete
	violations      int
	finished        bool
	took            time.Duration
}

// chaosTable collects the results of a test's rollouts.
type chaosTable struct {
	mu      sync.Mutex
	results []chaosResult
}

func (c *chaosTable) add(r chaosResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results = append(c.results, r)
}

// lines is the markdown table: one row per fault and strategy, in the order
// of chaosFaults and chaosStrategies.
func (c *chaosTable) lines() []string {
	out := []string{
		"| fault | strategy | runs | injected mid-rollout | violations | rollouts finished | mean time |",
		"| --- | --- | --: | --: | --: | --: | --: |",
	}
	for _, x := range c.rows() {
		out = append(out, fmt.Sprintf("| %s | %s | %d | %d | %d | %d/%d | %s |", x.fault, x.strategy, x.runs, x.mid,
			x.violations, x.finished, x.runs, (x.took/time.Duration(x.runs)).Round(100*time.Millisecond)))
	}
	return out
}

// tsv is the same rows as tab-separated values with the total time in
// seconds, for hack/chaos.sh to add up the tables of runs side by side.
func (c *chaosTable) tsv() string {
	var b strings.Builder
	for _, x := range c.rows() {
		fmt.Fprintf(&b, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\n", x.fault, x.strategy, x.runs, x.mid, x.violations, x.finished, x.took.Seconds())
	}
	return b.String()
}

// chaosRow is one fault and strategy summed over its rollouts.
type chaosRow struct {
	fault, strategy                 string
	runs, mid, violations, finished int
	took                            time.Duration
}

// rows sums the results per fault and strategy, in the order of chaosFaults
// and chaosStrategies.
func (c *chaosTable) rows() []chaosRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	type row = chaosRow
	rows := map[[2]string]*row{}
	for _, r := range c.results {
		k := [2]string{r.fault, r.strategy}
		if rows[k] == nil {
			rows[k] = &row{}
		}
		x := rows[k]
		x.runs++
		x.violations += r.violations
		x.took += r.took
		if r.mid {
			x.mid++
		}
		if r.finished {
			x.finished++
		}
	}
	var out []chaosRow
	for _, f := range chaosFaults {
		for _, st := range chaosStrategies {
			if x := rows[[2]string{f.name, st.name}]; x != nil {
				x.fault, x.strategy = f.name, st.name
				out = append(out, *x)
			}
		}
	}
	return out
}

// The rollouts of every strategy survive every fault: each fault is injected
// at a random moment of a rollout, verified, cleared, and the rollout ends on
// the new spec with indices without holes, under the invariant monitor the
// whole time. The table of results is logged at the end.
func TestChaos_RolloutsSurviveFaults(t *testing.T) {
	runs := chaosRuns(t)
	rng := crashRand(t, 3)
	t.Logf("%s=%d: each fault injected %d time(s)", envChaosRuns, runs, runs)
	table := &chaosTable{}
	t.Cleanup(func() {
		t.Logf("chaos results (%s=%d, seed as logged above):\n%s", envChaosRuns, runs, strings.Join(table.lines(), "\n"))
		if path := os.Getenv(envChaosResults); path != "" {
			if err := os.WriteFile(path, []byte(table.tsv()), 0o644); err != nil {
				t.Errorf("writing %s: %v", path, err)
			}
		}
		for _, r := range table.results {
			if r.violations > 0 || !r.finished {
				t.Errorf("fault %q under %s: %d violations, finished %v", r.fault, r.strategy, r.violations, r.finished)
			}
		}
	})

	// Two replicas of the operator race for the Lease, talking to the
	// apiserver through a proxy the test can cut.
	operatorsBehindProxy(t)

	only, onlyStrategies := regexp.MustCompile(os.Getenv(envChaosFaults)), regexp.MustCompile(os.Getenv(envChaosStrategies))
	plan := make([][]int, len(chaosStrategies)) // strategy → fault indices
	for f := range chaosFaults {
		if !only.MatchString(chaosFaults[f].name) {
			continue
		}
		for run := range runs {
			st := (f + run) % len(chaosStrategies)
			if onlyStrategies.MatchString(chaosStrategies[st].name) {
				plan[st] = append(plan[st], f)
			}
		}
	}
	for si := range chaosStrategies {
		if len(plan[si]) == 0 {
			continue
		}
		st := &chaosStrategies[si]
		t.Run(st.name, func(t *testing.T) {
			// A broken invariant ends a scene (the monitor holds on to its
			// first violation): the faults left get a new one.
			left := plan[si]
			for scene := 1; len(left) > 0; scene++ {
				had := len(left)
				t.Run(fmt.Sprintf("scene-%d", scene), func(t *testing.T) {
					runChaosScene(t, st, &left, rng, runs == 1, table)
				})
				if len(left) == had {
					t.Fatalf("scene %d ran no fault; %d left", scene, len(left))
				}
			}
		})
	}
}

// The operator's two replicas during the chaos test, both reaching the
// apiserver through chaosProxy, racing for the leader Lease.
var (
	chaosProxy    *tcpProxy
	chaosReplicas []*operator
)

// operatorsBehindProxy restarts the shared operator with leader election and
// a kubeconfig that reaches the apiserver through a tcpProxy, starts a second
// replica beside it, and puts everything back when the test ends.
func operatorsBehindProxy(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	out := filepath.Join(testCluster.DevDir, "operator-proxied.kubeconfig")
	// The proxy's address goes into the kubeconfig: listen first.
	p, err := startProxy("")
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := proxiedKubeconfig(testCluster.Kubeconfig, out, p.Addr())
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	p.upstream = upstream
	second, err := testOperator.replica("2")
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	second.kubeconfig, second.leaderElect = out, true
	original, err := testOperator.restartWith(ctx, out, true)
	if err == nil {
		err = second.start(ctx)
	}
	chaosProxy, chaosReplicas = p, []*operator{testOperator, second}
	t.Cleanup(func() {
		chaosProxy, chaosReplicas = nil, nil
		p.Restore()
		if err := second.kill(); err != nil {
			t.Logf("stopping the second replica: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := testOperator.restartWith(ctx, original, false); err != nil {
			t.Errorf("restarting the operator without the proxy: %v", err)
		}
		p.Close()
	})
	if err != nil {
		t.Fatalf("starting the operator replicas behind the proxy: %v", err)
	}
	var leader *operator
	err = waitFor(ctx, time.Minute, func() bool { leader = currentLeader(ctx); return leader != nil })
	if err != nil {
		t.Fatal("neither operator replica became the leader within a minute")
	}
	t.Logf("two operator replicas (pids %d, %d; logs %s, %s) reach the apiserver (%s) through a proxy at %s; pid %d leads",
		testOperator.pid(), second.pid(), testOperator.LogPath, second.LogPath, upstream, p.Addr(), leader.pid())
}

// currentLeader is the replica that reports holding the Lease, if exactly one
// does.
func currentLeader(ctx context.Context) *operator {
	var leaders []*operator
	for _, o := range chaosReplicas {
		if ok, err := o.leading(ctx); err == nil && ok {
			leaders = append(leaders, o)
		}
	}
	if len(leaders) != 1 {
		return nil
	}
	return leaders[0]
}

// superviseReplicas starts again a replica that exited on its own, as its
// Deployment would, and says so.
func superviseReplicas(r *chaosRollout) error {
	for i, o := range chaosReplicas {
		if !o.exitedOnItsOwn() {
			continue
		}
		if err := o.kill(); err != nil { // collects the exit
			return err
		}
		if err := o.start(r.s.t.Context()); err != nil {
			return err
		}
		r.note("operator replica %d had exited (see %s); started again", i+1, o.LogPath)
	}
	return nil
}

// runChaosScene makes one strategy's PodCliqueSet and rolls it once per
// fault, taking the faults from the front of faults as it goes.
func runChaosScene(t *testing.T, st *chaosStrategy, faults *[]int, rng *rand.Rand, short bool, table *chaosTable) {
	s := newScene(t, st.nodes, st.pcs(t))
	created, err := s.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.awaitLayout("the PodCliqueSet to become Available", 3*time.Minute, specLayout(&created.Spec, "v1"))
	n, version, scaled := 1, "v1", false
	next := func() string { n++; return fmt.Sprintf("v%d", n) }
	for len(*faults) > 0 {
		f := (*faults)[0]
		*faults = (*faults)[1:]
		fault := &chaosFaults[f]
		r := &chaosRollout{s: s, st: st, rng: rng, short: short, next: next, from: version, scaled: &scaled}
		res := chaosResult{fault: fault.name, strategy: st.name}
		before := len(s.m.Violations())
		_, restartsBefore := controlPlane.since(0)
		start := time.Now()
		func() {
			// Recorded even when the rollout ends the test (a violation
			// fails it at once).
			defer func() {
				res.violations = len(s.m.Violations()) - before
				res.took = time.Since(start)
				table.add(res)
			}()
			defer r.noteControlPlaneRestarts(restartsBefore)
			// A fault that ends the test half way (a broken invariant while
			// it holds) is still cleared, or every later scene runs without a
			// scheduler or behind a cut connection.
			defer clearFaults(t)
			// A fault counts only when it lands mid-rollout: a rollout that
			// finished before the chosen moment is followed by another, with
			// an earlier moment, before the fault goes in.
			delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(3500*time.Millisecond)))
			for try := 1; ; try++ {
				start = time.Now() // the rollout the fault goes into
				r.version = next()
				t.Logf("rollout %s → %s under %q", r.from, r.version, fault.name)
				r.pcs = s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
					setImageTag(r.version)(spec)
					if st.partition {
						spec.UpdateStrategy.RollingUpdate.Partition = new(int32(1))
					}
				})
				res.mid = s.await("the rollout, before the fault", delay, r.step) != nil
				if res.mid {
					t.Logf("  fault at %s, mid-rollout (try %d)", delay.Round(10*time.Millisecond), try)
					break
				}
				if try == chaosMidRolloutTries {
					t.Fatalf("fault %q: %d rollouts in a row were complete before the fault's moment (last %s); it never landed mid-rollout",
						fault.name, try, delay.Round(10*time.Millisecond))
				}
				t.Logf("  rollout complete before the fault at %s; rolling again to inject it mid-rollout", delay.Round(10*time.Millisecond))
				r.from = r.version
				delay = 300*time.Millisecond + time.Duration(rng.Int64N(int64(delay-300*time.Millisecond)/2+1))
			}
			if err := fault.inject(r); err != nil {
				t.Fatalf("fault %q: %v (seed: see the log's first line)", fault.name, err)
			}
			if err := superviseReplicas(r); err != nil {
				t.Fatal(err)
			}
			if err := s.await("the rollout to "+r.version+" after the fault", 4*time.Minute, r.step); err != nil {
				t.Fatalf("fault %q: %v", fault.name, err)
			}
			res.finished = true
			end, err := s.observe(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			s.assertRolledOut(end, r.pcs)
			t.Logf("  complete %s after the spec change", time.Since(start).Round(100*time.Millisecond))
		}()
		version = r.version
		if err := s.m.Err(); err != nil {
			t.Fatalf("after fault %q: %v", fault.name, err)
		}
	}
}

// clearFaults starts again the components a fault killed and restores the
// operator's connection; both are no-ops when the fault cleared itself.
func clearFaults(t *testing.T) {
	if chaosProxy != nil {
		chaosProxy.Restore()
	}
	started, err := testCluster.StartKilled(context.Background())
	if err != nil {
		t.Errorf("starting the components a fault killed: %v", err)
	} else if started {
		t.Logf("  a component the fault killed was still down; started again")
	}
}

// noteControlPlaneRestarts notes the components the supervisor started
// again since the n-th restart; one it could not start fails the test.
func (r *chaosRollout) noteControlPlaneRestarts(n int) {
	got, _ := controlPlane.since(n)
	for _, x := range got {
		if x.Err != nil {
			r.s.t.Errorf("%s (pid %d) exited on its own and could not be started again: %v", x.Component, x.PID, x.Err)
			continue
		}
		r.note("%s (pid %d) exited on its own at %s; the supervisor started it again", x.Component, x.PID, x.At.Format("15:04:05.000"))
	}
}

// ---- the faults ----

// apiserverReady asks the apiserver's /readyz; nil means it answered 200.
func apiserverReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	hc, err := rest.HTTPClientFor(testCluster.RESTConfig)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(testCluster.RESTConfig.Host, "/")+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
	}
	return nil
}

// injectComponentRestart kills a control-plane component (SIGKILL), checks
// that the apiserver stopped answering (or, for etcd, stopped being ready),
// keeps it down a random moment and starts it again.
func injectComponentRestart(component string) func(r *chaosRollout) error {
	return func(r *chaosRollout) error {
		ctx := r.s.t.Context()
		pid, err := testCluster.KillComponent(component)
		if err != nil {
			return err
		}
		killed := time.Now()
		var seen error
		if err := waitFor(ctx, 20*time.Second, func() bool { seen = apiserverReady(ctx); return seen != nil }); err != nil {
			return fmt.Errorf("the apiserver still reports ready 20s after %s (pid %d) was killed", component, pid)
		}
		r.note("killed %s (pid %d); the apiserver's /readyz: %s", component, pid, oneLine(seen.Error()))
		r.hold(time.Duration(r.rng.Int64N(int64(2 * time.Second))))
		if err := testCluster.StartComponents(ctx); err != nil {
			return err
		}
		if err := waitFor(ctx, time.Minute, func() bool { return apiserverReady(ctx) == nil }); err != nil {
			return fmt.Errorf("the apiserver is not ready a minute after %s was started again", component)
		}
		newPID, running := testCluster.ComponentRunning(component)
		if !running || newPID == pid {
			return fmt.Errorf("%s did not come back (pid %d, running %v)", component, newPID, running)
		}
		r.note("%s back as pid %d, ready %s after the kill", component, newPID, time.Since(killed).Round(100*time.Millisecond))
		r.kwokRetry = true
		return nil
	}
}

// kwokStageRetryAfter is how long a pod may stay bound and not Ready, or
// terminating, before the test takes kwok to have dropped its stage: well
// past the pods' ready delay and kwok's delete delay (a second or two).
const kwokStageRetryAfter = 10 * time.Second

// showStuckPodsToKwok touches an annotation of each pod stuck for longer than
// kwokStageRetryAfter (bound and not Ready, or terminating), once per pod, so
// that kwok plays its stage again. kwok drops a stage when the apiserver
// fails the stage's write with an error kwok does not retry, as it does while
// etcd comes back (seen in the full suite: a pod bound just before etcd went
// down never turned Ready; kwok's delete stage is dropped the same way). A
// kubelet retries both. Touching a pod whose stage is only slow starts its
// delay again.
func (r *chaosRollout) showStuckPodsToKwok(ctx context.Context, pods []corev1.Pod) error {
	now := time.Now()
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || r.retried[p.UID] {
			continue
		}
		var stuck string
		switch {
		case p.DeletionTimestamp != nil:
			began := p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
			if now.Sub(began) > kwokStageRetryAfter {
				stuck = fmt.Sprintf("terminating for %s", now.Sub(began).Round(time.Second))
			}
		case !isReady(p):
			if c := podCondition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionTrue && now.Sub(c.LastTransitionTime.Time) > kwokStageRetryAfter {
				stuck = fmt.Sprintf("bound and not Ready for %s", now.Sub(c.LastTransitionTime.Time).Round(time.Second))
			}
		}
		if stuck == "" {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, "lockstep.dev/chaos-shown-to-kwok", now.UTC().Format(time.RFC3339Nano))
		if err := testCluster.Client.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("touching pod %s: %w", p.Name, err)
		}
		if r.retried == nil {
			r.retried = map[types.UID]bool{}
		}
		r.retried[p.UID] = true
		r.note("pod %s %s after the outage: shown to kwok again", p.Name, stuck)
	}
	return nil
}

// injectSchedulerOutage kills kube-scheduler for 20s (5s in the short
// version); with respec the spec is changed and scaled while it is down.
func injectSchedulerOutage(respec bool) func(r *chaosRollout) error {
	return func(r *chaosRollout) error {
		ctx := r.s.t.Context()
		pid, err := testCluster.KillComponent("kube-scheduler")
		if err != nil {
			return err
		}
		if _, running := testCluster.ComponentRunning("kube-scheduler"); running {
			return errors.New("kube-scheduler still runs after SIGKILL")
		}
		r.note("killed kube-scheduler (pid %d)", pid)
		if respec {
			if err := r.respec(ctx); err != nil {
				return err
			}
		}
		outage := 20 * time.Second
		if r.short {
			outage = 5 * time.Second
		}
		r.hold(outage)
		pending, err := unboundPods(ctx, r.s.ns)
		if err != nil {
			return err
		}
		r.note("after %s without a scheduler %d pod(s) wait unbound", outage, pending)
		if err := testCluster.StartComponents(ctx); err != nil {
			return err
		}
		if newPID, running := testCluster.ComponentRunning("kube-scheduler"); !running || newPID == pid {
			return fmt.Errorf("kube-scheduler did not come back (pid %d, running %v)", newPID, running)
		}
		return nil
	}
}

// unboundPods counts the live pods of ns no node was chosen for.
func unboundPods(ctx context.Context, ns string) (int, error) {
	pods, err := listPods(ctx, ns)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Spec.NodeName == "" {
			n++
		}
	}
	return n, nil
}

// children lists the live PodCliques of the scene's PodCliqueSet.
func (s *scene) children(ctx context.Context) ([]v1alpha1.PodClique, error) {
	var list v1alpha1.PodCliqueList
	if err := testCluster.Client.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: s.name}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(pc v1alpha1.PodClique) bool { return pc.DeletionTimestamp != nil }), nil
}

// pick returns a random element.
func pick[T any](rng *rand.Rand, items []T) *T {
	if len(items) == 0 {
		return nil
	}
	return &items[rng.IntN(len(items))]
}

// injectPodCliqueScaled: another writer adds a replica to a child PodClique
// (as an HPA would through /scale). The operator keeps a child's replicas
// until the template's change (docs/operator.md), so the test checks that the
// edit held for a few seconds, then the writer puts the number back; the
// rollout must take both changes in its stride.
func injectPodCliqueScaled(r *chaosRollout) error {
	ctx := r.s.t.Context()
	cliques, err := r.s.children(ctx)
	if err != nil {
		return err
	}
	pc := pick(r.rng, cliques)
	if pc == nil {
		return errors.New("no PodClique to edit")
	}
	name := pc.Name
	edit := func(delta int32) (from, to int32, err error) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1alpha1.PodClique{}
			if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: r.s.ns, Name: name}, cur); err != nil {
				return err
			}
			from = cur.Spec.Replicas
			cur.Spec.Replicas += delta
			if err := testCluster.Client.Update(ctx, cur); err != nil {
				return err
			}
			to = cur.Spec.Replicas
			return nil
		})
		return from, to, err
	}
	was, edited, err := edit(1)
	if err != nil {
		return fmt.Errorf("editing PodClique %s: %w", name, err)
	}
	r.note("PodClique %s: replicas %d → %d by another writer", name, was, edited)
	r.hold(2*time.Second + time.Duration(r.rng.Int64N(int64(3*time.Second))))
	// The rollout may replace the edited PodClique meanwhile: a scaling
	// group's member goes with its group replica, and the new one has the
	// name but not the edit.
	replaced := func() { r.note("PodClique %s was replaced by the rollout during the hold; nothing to put back", name) }
	cur := &v1alpha1.PodClique{}
	if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: r.s.ns, Name: name}, cur); apierrors.IsNotFound(err) || (err == nil && cur.UID != pc.UID) {
		replaced()
		return nil
	} else if err != nil {
		return err
	}
	if cur.Spec.Replicas != edited {
		r.note("PodClique %s: replicas %d after the hold (the edit did not stay)", name, cur.Spec.Replicas)
		return nil
	}
	if _, back, err := edit(-1); apierrors.IsNotFound(err) {
		replaced()
	} else if err != nil {
		return fmt.Errorf("editing PodClique %s back: %w", name, err)
	} else {
		r.note("the edit held; the writer put replicas back to %d", back)
	}
	return nil
}

// injectPodCliqueDeleted: another writer deletes a child PodClique (its pods
// go with it); the operator must make it again.
func injectPodCliqueDeleted(r *chaosRollout) error {
	ctx := r.s.t.Context()
	cliques, err := r.s.children(ctx)
	if err != nil {
		return err
	}
	pc := pick(r.rng, cliques)
	if pc == nil {
		return errors.New("no PodClique to delete")
	}
	r.s.m.ExpectDeletionOf(labels.Set{v1alpha1.LabelPodClique: pc.Name})
	if err := testCluster.Client.Delete(ctx, pc); err != nil {
		return fmt.Errorf("deleting PodClique %s: %w", pc.Name, err)
	}
	uid := pc.UID
	err = r.until("PodClique "+pc.Name+" to be replaced", time.Minute, func(ctx context.Context) (bool, string, error) {
		cur := &v1alpha1.PodClique{}
		if err := testCluster.Client.Get(ctx, client.ObjectKeyFromObject(pc), cur); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return cur.UID != uid, fmt.Sprintf("uid %s", cur.UID), nil
	})
	if err != nil {
		return err
	}
	r.note("PodClique %s deleted by another writer, made again by the operator", pc.Name)
	return nil
}

// injectPodGroupDeleted: another writer deletes one of the PodGroups the
// operator made for its gangs; the operator must make it again.
func injectPodGroupDeleted(r *chaosRollout) error {
	ctx := r.s.t.Context()
	var list schedulingv1alpha2.PodGroupList
	if err := testCluster.Client.List(ctx, &list, client.InNamespace(r.s.ns)); err != nil {
		return err
	}
	groups := slices.DeleteFunc(list.Items, func(g schedulingv1alpha2.PodGroup) bool { return g.DeletionTimestamp != nil })
	g := pick(r.rng, groups)
	if g == nil {
		return errors.New("no PodGroup to delete")
	}
	if err := testCluster.Client.Delete(ctx, g); err != nil {
		return fmt.Errorf("deleting PodGroup %s: %w", g.Name, err)
	}
	uid := g.UID
	// Verified deleted: gone, replaced, or terminating (the PodGroup
	// protection finalizer keeps it until the last pod using it goes).
	err := r.until("PodGroup "+g.Name+" to be deleted", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		cur := &schedulingv1alpha2.PodGroup{}
		err := testCluster.Client.Get(ctx, client.ObjectKeyFromObject(g), cur)
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return cur.UID != uid || cur.DeletionTimestamp != nil, fmt.Sprintf("uid %s, finalizers %v", cur.UID, cur.Finalizers), nil
	})
	if err != nil {
		return err
	}
	r.note("PodGroup %s (of %d) deleted by another writer", g.Name, len(groups))
	return nil
}

// injectPodRelabelled: another writer changes the template-hash label of a
// pod Lockstep owns; the operator must treat the pod by what it finds (the
// rollout ends with every pod on its template's hash).
func injectPodRelabelled(r *chaosRollout) error {
	ctx := r.s.t.Context()
	o, err := r.s.observe(ctx)
	if err != nil {
		return err
	}
	live := slices.DeleteFunc(o.pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	p := pick(r.rng, live)
	if p == nil {
		return errors.New("no pod to relabel")
	}
	was := p.Labels[v1alpha1.LabelTemplateHash]
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels[v1alpha1.LabelTemplateHash] = "chaos-relabelled"
	if err := testCluster.Client.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("relabelling pod %s: %w", p.Name, err)
	}
	if got := p.Labels[v1alpha1.LabelTemplateHash]; got != "chaos-relabelled" {
		return fmt.Errorf("pod %s: label %s is %q after the patch", p.Name, v1alpha1.LabelTemplateHash, got)
	}
	r.note("pod %s: label %s %s → chaos-relabelled by another writer", p.Name, v1alpha1.LabelTemplateHash, was)
	return nil
}

// injectNodeDeleted deletes a node that runs pods of the rollout (announced to
// the monitor: the pod garbage collector deletes them, not the operator),
// waits until those pods are gone and adds the node back.
func injectNodeDeleted(r *chaosRollout) error {
	ctx := r.s.t.Context()
	node, onNode, err := r.pickNode(ctx)
	if err != nil {
		return err
	}
	for _, name := range onNode[*node] {
		r.s.m.ExpectDeletion(name)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: *node}}
	if err := testCluster.Client.Delete(ctx, n); err != nil {
		return fmt.Errorf("deleting node %s: %w", *node, err)
	}
	if err := testCluster.Client.Get(ctx, client.ObjectKeyFromObject(n), &corev1.Node{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("node %s still there after its deletion: %w", *node, err)
	}
	r.note("deleted node %s with %d pod(s) of the rollout", *node, len(onNode[*node]))
	deleted := time.Now()
	err = r.until("the pods of node "+*node+" to be gone", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods, err := listPods(ctx, r.s.ns)
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, p := range pods {
			if p.Spec.NodeName == *node {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, "left: " + strings.Join(left, ", "), nil
	})
	if err != nil {
		return err
	}
	r.note("its pods gone %s after the node; node added back", time.Since(deleted).Round(100*time.Millisecond))
	return testCluster.SetNodes(ctx, r.st.nodes)
}

// pickNode picks one of the nodes that run live pods of the rollout, and
// returns the pods by node.
func (r *chaosRollout) pickNode(ctx context.Context) (*string, map[string][]string, error) {
	pods, err := listPods(ctx, r.s.ns)
	if err != nil {
		return nil, nil, err
	}
	onNode := map[string][]string{}
	var nodes []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		if onNode[p.Spec.NodeName] == nil {
			nodes = append(nodes, p.Spec.NodeName)
		}
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p.Name)
	}
	slices.Sort(nodes)
	node := pick(r.rng, nodes)
	if node == nil {
		return nil, nil, errors.New("no node runs a pod of the rollout")
	}
	return node, onNode, nil
}

// kubeletNotReady is the node annotation that makes kwok report the node
// NotReady (hack/dev/kwok.yaml, stage node-not-ready).
const kubeletNotReady = "lockstep.dev/kubelet-not-ready"

// setKubeletNotReady makes a node's kubelet report NotReady, or Ready again.
func setKubeletNotReady(ctx context.Context, name string, notReady bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		patch := client.MergeFrom(n.DeepCopy())
		if notReady {
			metav1.SetMetaDataAnnotation(&n.ObjectMeta, kubeletNotReady, "true")
		} else {
			delete(n.Annotations, kubeletNotReady)
		}
		return testCluster.Client.Patch(ctx, n, patch)
	})
}

// injectNodeNotReady makes a node that runs pods of the rollout go NotReady,
// as when its container runtime is down: kwok, playing its kubelet, reports
// Ready=False, the node lifecycle controller taints it not-ready (NoSchedule,
// and NoExecute, which the pods tolerate for 300 s), and the test reports the
// node's pods unready, as that kubelet would (the node lifecycle controller
// marks pods unready only when it loses a node's heartbeat, after a grace
// period of minutes). The node stays so up to 5 s, then reports Ready again,
// and the test reports the pods it took down Ready again (kwok plays no pod
// that is already Running).
func injectNodeNotReady(r *chaosRollout) (err error) {
	ctx := r.s.t.Context()
	node, onNode, err := r.pickNode(ctx)
	if err != nil {
		return err
	}
	if err := setKubeletNotReady(ctx, *node, true); err != nil {
		return fmt.Errorf("making node %s NotReady: %w", *node, err)
	}
	given := false
	defer func() {
		// Never leave a node NotReady for the tests after.
		if !given {
			if e := setKubeletNotReady(context.Background(), *node, false); e != nil && err == nil {
				err = e
			}
		}
	}()
	stopped := time.Now()
	err = r.until("node "+*node+" to be NotReady and tainted", time.Minute, func(ctx context.Context) (bool, string, error) {
		n := &corev1.Node{}
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Name: *node}, n); err != nil {
			return false, "", err
		}
		ready := nodeCondition(n, corev1.NodeReady)
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule
		})
		return ready == corev1.ConditionFalse && tainted, fmt.Sprintf("Ready %q, taints %v", ready, n.Spec.Taints), nil
	})
	if err != nil {
		return err
	}
	r.note("node %s (%d pod(s) of the rollout) NotReady and tainted %s after its kubelet was told to report so", *node,
		len(onNode[*node]), time.Since(stopped).Round(100*time.Millisecond))
	// The kubelet reports the node's pods unready for as long as the fault
	// lasts, those kwok would still make Ready included.
	down := map[string]bool{}
	hold := time.Second + time.Duration(r.rng.Int64N(int64(4*time.Second)))
	_ = r.until("the node's fault to end", hold, func(ctx context.Context) (bool, string, error) {
		pods, err := listPods(ctx, r.s.ns)
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			if p.Spec.NodeName != *node || p.DeletionTimestamp != nil || !isReady(&p) {
				continue
			}
			if err := setPodReady(ctx, p.Name, r.s.ns, false); client.IgnoreNotFound(err) != nil {
				return false, "", err
			}
			down[p.Name] = true
		}
		return false, fmt.Sprintf("%d pod(s) reported unready", len(down)), nil
	})
	names := slices.Sorted(maps.Keys(down))
	r.note("%d pod(s) of the rollout on it reported unready for %s: %v", len(names), hold.Round(100*time.Millisecond), names)
	given = true
	if err := setKubeletNotReady(ctx, *node, false); err != nil {
		return fmt.Errorf("making node %s Ready again: %w", *node, err)
	}
	err = r.until("node "+*node+" to be Ready again", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		n := &corev1.Node{}
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Name: *node}, n); err != nil {
			return false, "", err
		}
		ready := nodeCondition(n, corev1.NodeReady)
		return ready == corev1.ConditionTrue, fmt.Sprintf("Ready %q", ready), nil
	})
	if err != nil {
		return err
	}
	back, err := readyAgain(ctx, r.s.ns, names)
	if err != nil {
		return err
	}
	r.note("node %s Ready again; %d of its %d unready pod(s) still there, reported Ready again", *node, back, len(names))
	return nil
}

// nodeCondition is the status of one of a node's conditions ("" without it).
func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// readyAgain reports the named pods Ready again, as their kubelet would once
// probes pass, and counts those still there (the others were replaced).
func readyAgain(ctx context.Context, ns string, names []string) (int, error) {
	n := 0
	for _, name := range names {
		err := setPodReady(ctx, name, ns, true)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return n, fmt.Errorf("making pod %s Ready again: %w", name, err)
		default:
			n++
		}
	}
	return n, nil
}

// setPodReady sets the Ready and ContainersReady conditions of a pod (and its
// containers' ready flags), as a kubelet would when probes fail or pass. No
// kwok stage matches a Running pod, so the pod keeps what is set here.
func setPodReady(ctx context.Context, name, ns string, ready bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		now := metav1.Now()
		for i := range p.Status.Conditions {
			c := &p.Status.Conditions[i]
			if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.LastTransitionTime = status, now
			}
		}
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].Ready = ready
		}
		return testCluster.Client.Status().Patch(ctx, p, patch)
	})
}

// injectCrash turns up to two Ready pods of the new revision unready for a few
// seconds, then Ready again; with rollback the image is rolled back while
// they are down.
func injectCrash(rollback bool) func(r *chaosRollout) error {
	return func(r *chaosRollout) error {
		ctx := r.s.t.Context()
		var victims []string
		err := r.until("a Ready pod of "+r.version, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
			pods, err := listPods(ctx, r.s.ns)
			if err != nil {
				return false, "", err
			}
			victims = victims[:0]
			for _, p := range pods {
				if p.DeletionTimestamp == nil && imageTag(&p) == r.version && isReady(&p) {
					victims = append(victims, p.Name)
				}
			}
			return len(victims) > 0, fmt.Sprintf("%d Ready pods of %s", len(victims), r.version), nil
		})
		if err != nil {
			return err
		}
		slices.Sort(victims)
		r.rng.Shuffle(len(victims), func(i, j int) { victims[i], victims[j] = victims[j], victims[i] })
		victims = victims[:min(2, len(victims))]
		for _, name := range victims {
			if err := setPodReady(ctx, name, r.s.ns, false); err != nil {
				return fmt.Errorf("making pod %s unready: %w", name, err)
			}
			p := &corev1.Pod{}
			if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: r.s.ns, Name: name}, p); err == nil && isReady(p) {
				return fmt.Errorf("pod %s is still Ready after the crash", name)
			}
		}
		r.note("pods %v of %s crashed (unready)", victims, r.version)
		if rollback {
			if err := r.rollback(ctx); err != nil {
				return err
			}
		}
		r.hold(3*time.Second + time.Duration(r.rng.Int64N(int64(3*time.Second))))
		recovered, err := readyAgain(ctx, r.s.ns, victims)
		if err != nil {
			return err
		}
		r.note("%d of %d Ready again (the others were replaced meanwhile)", recovered, len(victims))
		return nil
	}
}

// injectConnectionCut severs the operator's connections to the apiserver and
// refuses new ones for a while (5s short, 15s otherwise).
func injectConnectionCut(r *chaosRollout) error {
	p := chaosProxy
	if p == nil {
		return errors.New("the operator is not behind the proxy")
	}
	_, refusedBefore := p.counts()
	severed := p.Cut()
	cut := 15 * time.Second
	if r.short {
		cut = 5 * time.Second
	}
	r.hold(cut)
	acceptedAt, refusedAt := p.counts()
	p.Restore()
	refused := refusedAt - refusedBefore
	if severed == 0 && refused == 0 {
		p.Restore()
		return errors.New("the cut severed no connection and refused none: the operator does not go through the proxy")
	}
	r.note("cut the operator off for %s: %d connection(s) severed, %d attempt(s) refused", cut, severed, refused)
	err := r.until("the operator to reconnect", time.Minute, func(context.Context) (bool, string, error) {
		accepted, _ := p.counts()
		return accepted > acceptedAt, fmt.Sprintf("%d connections accepted", accepted), nil
	})
	if err != nil {
		return err
	}
	r.note("the operator reconnected")
	return nil
}

// injectLeaderKilled kills the replica holding the Lease (SIGKILL: it does
// not give the Lease up), checks that the other one takes over, and starts the
// killed one again as the standby.
func injectLeaderKilled(r *chaosRollout) error {
	ctx := r.s.t.Context()
	leader := currentLeader(ctx)
	if leader == nil {
		return errors.New("no single replica leads")
	}
	pid := leader.pid()
	if err := leader.kill(); err != nil {
		return err
	}
	killed := time.Now()
	var next *operator
	err := r.until("the standby to take the Lease over", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		next = currentLeader(ctx)
		return next != nil && next != leader, "no new leader", nil
	})
	if err != nil {
		return err
	}
	r.note("killed the leader (pid %d); pid %d leads %s later", pid, next.pid(), time.Since(killed).Round(100*time.Millisecond))
	if err := leader.start(ctx); err != nil {
		return err
	}
	r.note("the killed replica is back as the standby (pid %d)", leader.pid())
	return nil
}

// waitFor polls cond every pollInterval until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	return nil
}

// oneLine shortens an error for a note.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
