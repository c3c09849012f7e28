package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// `lockstep plan` says it runs what the hub runs. This test holds it to that
// for the rehearsal docs/plan.md shows: examples/fleet/web.yaml (10 pods, 2 :
// 3 between region eu and us, maxUnavailable 2, maxSurge 1) over eu-1, eu-2
// and us-1, changed to weights 1 : 3 with memberLostTimeoutSeconds 60, us-1
// lost from wave 2 on (`--lose us-1@2`), 20 s a wave.
//
// The real hub is the FederatedWorkload controller's Reconcile against a hub
// apiserver and three member apiservers, us-1 reached through a proxy; the
// MemberCluster controller probes the members for real. The test drives the
// rounds: it runs one Reconcile for each round of the plan, at the plan's
// clock, so the two can be compared round for round (the hub's own work
// queue would run rounds on events and polls, at times no plan can know).
// Between rounds it plays each member's controllers with the plan's own
// member model (fleetsim.Member), fed the requests the hub really sent, and
// writes what they report (status, ReplicaSets) into the member apiservers,
// where the hub reads it. At the plan's wave 2 it closes us-1's proxy: the
// probe turns us-1 not Ready (Unreachable) and the test, as the Placement
// controller would, drops it from the placement's decision; the clock of
// the rounds runs from the condition's lastTransitionTime as the plan's runs
// from its loss.
//
// Every round must send each member the same requests (share, grant, record,
// pod template revision) and leave the same status (counts, clusters,
// conditions) as the plan's round; then the sequence of writes each member
// received is the same, and so are the final shares and status. After every
// round a second Reconcile runs on the same members, as a poll or an event
// would run one before the members move: it must send nothing new, so the
// hub's extra rounds change none of that. One difference is known and let
// through: the round after a member object is created, reading it back
// before its controller has observed it, drops the record's stillActing
// {"started":true} the create carried (what a new object may act on besides
// its grant: a grant of nothing, which changes no charge). The plan, one
// round per wave, never runs that round; the rounds after it still match
// the plan's exactly.
func TestPlan_MatchesTheHubOnAWeightChangeWithALostMember(t *testing.T) {
	third, err := testenv.StartMember()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop("third member", third) })

	pf := newPlanFleet(t, "plan-lose", map[string]*testenv.Cluster{"eu-1": memberEnv, "eu-2": member2Env, "us-1": third},
		map[string]string{"eu-1": "eu", "eu-2": "eu", "us-1": "us"}, "us-1")
	from, to := pf.manifests()
	lost := pf.name("us-1")

	// The plan, from the very objects the hub reads.
	var rounds []fleetplan.Round
	in := fleetplan.Input{From: from, Workload: to, Kind: member.Deployment, Clusters: pf.planClusters(),
		Startup: 20 * time.Second, Lose: map[string]int{lost: 2}, OnRound: func(rd fleetplan.Round) { rounds = append(rounds, rd) }}
	in.Placement, in.Sets, in.Bindings = pf.placementObjects()
	res, err := fleetplan.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	// What docs/plan.md shows of it.
	story := fleetplan.LostCluster{Cluster: lost, From: 2, Lost: 5, Forgotten: 6, Share: 5, Runs: 5}
	if !res.Done || len(res.Breaches) > 0 || len(res.Lost) != 1 || res.Lost[0] != story {
		t.Fatalf("the plan: done %v, breaches %v, lost %+v; want %+v", res.Done, res.Breaches, res.Lost, story)
	}

	// The hub, round for round.
	pf.createWorkload(from)
	// hubWrites are what the hub's rounds sent each member, allWrites with
	// what the second rounds sent too, repeats folded.
	hubWrites, allWrites := map[string][]string{}, map[string][]string{}
	var offset time.Duration
	for k, rd := range rounds {
		if rd.Wave == 1 && pf.workload().Generation == 1 {
			pf.change(to)
		}
		if slices.Contains(rd.Unreachable, lost) && !pf.cut[lost] {
			since := pf.lose(lost)
			// The plan's clock counts memberLostTimeoutSeconds from its
			// loss; the hub's from the probe's transition.
			offset = since.Sub(rd.In.Now)
		}
		pf.now = rd.In.Now.Add(offset)
		where := fmt.Sprintf("round %d (wave %d)", k+1, rd.Wave)

		sent := pf.reconcile(where)
		for _, name := range pf.names {
			want, got := planRequests(rd.Received[name]), hubRequests(sent[name])
			if !slices.Equal(want, got) {
				t.Errorf("%s: %s received from the plan's hub:\n  %s\nfrom the hub:\n  %s", where, name,
					strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
			hubWrites[name] = appendDistinct(hubWrites[name], got...)
			allWrites[name] = appendDistinct(allWrites[name], got...)
		}
		if want, got := statusSummary(rd.Out.Status), statusSummary(pf.workload().Status); want != got {
			t.Errorf("%s: the plan's status\n  %s\nthe hub's\n  %s", where, want, got)
		}
		if t.Failed() {
			t.FailNow()
		}

		// A second round on the same members (a poll, or an event) changes
		// nothing the members are sent.
		again := pf.reconcile(where + ", again")
		for _, name := range pf.names {
			for _, got := range hubRequests(again[name]) {
				last := hubWrites[name][len(hubWrites[name])-1]
				switch {
				case got == last:
				case got == strings.Replace(last, stillActingNothing, "", 1) && created(sent[name]):
					// Known: see the test's comment.
					t.Logf("%s: a second round dropped %s's stillActing of nothing:\n  %s", where, name, got)
				default:
					t.Fatalf("%s: a second round sent %s something new:\n  %s\nafter\n  %s", where, name, got, last)
				}
				allWrites[name] = appendDistinct(allWrites[name], got)
			}
		}
		pf.step(append(sent.all(), again.all()...))
	}

	// The writes each member received, in order, repeats folded: the same
	// from the plan and from the hub's rounds, and with the hub's second
	// rounds, the same but for the record's stillActing.
	planWrites := map[string][]string{}
	for _, rd := range rounds {
		for _, name := range pf.names {
			planWrites[name] = appendDistinct(planWrites[name], planRequests(rd.Received[name])...)
		}
	}
	for _, name := range pf.names {
		t.Logf("%s received, in order:\n  %s", name, strings.Join(hubWrites[name], "\n  "))
		if !slices.Equal(planWrites[name], hubWrites[name]) {
			t.Errorf("%s: the plan's writes differ from the hub's", name)
		}
		if want, got := foldStillActing(planWrites[name]), foldStillActing(allWrites[name]); !slices.Equal(want, got) {
			t.Errorf("%s: with its second rounds the hub sent\n  %s\nthe plan\n  %s", name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	if n := len(pf.rec.after(lost)); n > 0 {
		t.Errorf("the hub sent %d requests to %s after losing it", n, lost)
	}

	// The end: the shares the members hold and the status.
	fw := pf.workload()
	if want, got := statusSummary(res.Status), statusSummary(fw.Status); want != got {
		t.Errorf("final status: plan\n  %s\nhub\n  %s", want, got)
	}
	for _, c := range res.Status.Clusters {
		if got := readDep(pf.deployment(c.Name)).replicas; got != int64(c.DesiredReplicas) {
			t.Errorf("%s holds %d replicas, the plan's share is %d", c.Name, got, c.DesiredReplicas)
		}
	}
	if len(res.Status.Clusters) != 2 {
		t.Errorf("the plan ends with clusters %+v, want the two it reaches", res.Status.Clusters)
	}
	if c := progressing(fw); c.Reason != string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) || clusterStatus(fw, lost) != nil {
		t.Errorf("the hub ends %s: %s, clusters %+v", c.Reason, c.Message, fw.Status.Clusters)
	}
}

// planFleet is one test's hub and members for a plan: the members'
// connections, the requests the hub sent through them, and each member's
// controllers played by fleetsim.Member.
type planFleet struct {
	t  *testing.T
	ns string
	// names are the MemberClusters, sorted; short maps eu-1 to its name.
	names   []string
	short   map[string]string
	labels  map[string]map[string]string
	envs    map[string]*testenv.Cluster
	proxies map[string]*proxy
	cut     map[string]bool
	rec     *recordingMembers
	hub     *federatedworkload.Reconciler
	now     time.Time
	sims    map[string]*fleetsim.Member
}

// newPlanFleet registers a MemberCluster per env, labelled region=regions[c],
// the one named proxied reached through a proxy, and runs the MemberCluster
// controller (the probes) with a fresh member registry.
func newPlanFleet(t *testing.T, prefix string, envs map[string]*testenv.Cluster, regions map[string]string, proxied string) *planFleet {
	t.Helper()
	pf := &planFleet{t: t, ns: newOwnNamespace(t, prefix), short: map[string]string{}, labels: map[string]map[string]string{},
		envs: map[string]*testenv.Cluster{}, proxies: map[string]*proxy{}, cut: map[string]bool{}, sims: map[string]*fleetsim.Member{}}
	for c, env := range envs {
		name := pf.ns + "-" + c
		pf.short[c] = name
		pf.names = append(pf.names, name)
		pf.envs[name] = env
		pf.sims[name] = fleetsim.NewMember(name)
		server := ""
		if c == proxied {
			pf.proxies[name] = newProxy(t, env.Config.Host)
			server = pf.proxies[name].addr
		}
		createSecret(t, name, map[string][]byte{"kubeconfig": kubeconfigOf(t, env, server)})
		pf.labels[name] = map[string]string{"fw-test": pf.ns, "region": regions[c]}
		createMemberCluster(t, name, name, pf.labels[name])
	}
	slices.Sort(pf.names)
	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	pf.rec = &recordingMembers{Clusters: reg, sent: map[string][]sentRequest{}}
	var recorder *federatedworkload.Reconciler
	runManager(t, func(mgr ctrl.Manager) error {
		recorder = &federatedworkload.Reconciler{Client: hubEnv.Client, Members: pf.rec, Recorder: mgr.GetEventRecorder("test-plan"),
			RolloutPoll: time.Second, Resync: time.Second, Now: func() time.Time { return pf.now }}
		return (&membercluster.Reconciler{
			Client: mgr.GetClient(), Members: reg, Recorder: mgr.GetEventRecorder("test-membercluster"),
			ProbeInterval: testProbes.ProbeInterval, ProbeTimeout: testProbes.ProbeTimeout, FleetNamespace: testenv.FleetNamespace,
		}).SetupWithManager(mgr)
	})
	pf.hub = recorder
	for _, name := range pf.names {
		waitForReady(t, name, metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 30*time.Second)
	}
	pl := &fleetv1alpha1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: pf.ns, Name: fwPlacement},
		Spec:       fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fw-test": pf.ns}}},
	}
	if err := hubEnv.Client.Create(context.Background(), pl); err != nil {
		t.Fatalf("creating Placement: %v", err)
	}
	pf.writeDecision(pf.names...)
	t.Cleanup(func() {
		for _, env := range envs {
			for _, kind := range []string{"Deployment", "ReplicaSet"} {
				_ = env.Client.DeleteAllOf(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": kind}}, client.InNamespace(pf.ns))
			}
		}
	})
	return pf
}

func (pf *planFleet) name(short string) string { return pf.short[short] }

// manifests are examples/fleet/web.yaml in the test's namespace and the
// change docs/plan.md rehearses: weights 1 : 3, memberLostTimeoutSeconds 60.
func (pf *planFleet) manifests() (from, to *fleetv1alpha1.FederatedWorkload) {
	pf.t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "fleet", "web.yaml"))
	if err != nil {
		pf.t.Fatal(err)
	}
	from = &fleetv1alpha1.FederatedWorkload{}
	if err := yaml.UnmarshalStrict(data, from); err != nil {
		pf.t.Fatalf("reading examples/fleet/web.yaml: %v", err)
	}
	from.Namespace, from.Spec.PlacementRef.Name = pf.ns, fwPlacement
	to = from.DeepCopy()
	for i := range to.Spec.Division.Weights {
		if to.Spec.Division.Weights[i].ClusterSelector.MatchLabels["region"] == "eu" {
			to.Spec.Division.Weights[i].Weight = 1
		}
	}
	timeout := int32(60)
	to.Spec.MemberLostTimeoutSeconds = &timeout
	return from, to
}

// planClusters are the MemberClusters as `lockstep plan --cluster` names them.
func (pf *planFleet) planClusters() []fleetplan.Cluster {
	var out []fleetplan.Cluster
	for _, name := range pf.names {
		out = append(out, fleetplan.Cluster{Name: name, Labels: pf.labels[name]})
	}
	return out
}

// placementObjects are the Placement, the cluster sets and the namespace's
// bindings as the hub reads them.
func (pf *planFleet) placementObjects() (*fleetv1alpha1.Placement, []fleetv1alpha1.MemberClusterSet, []fleetv1alpha1.MemberClusterSetBinding) {
	pf.t.Helper()
	ctx := context.Background()
	var pl fleetv1alpha1.Placement
	var sets fleetv1alpha1.MemberClusterSetList
	var bindings fleetv1alpha1.MemberClusterSetBindingList
	if err := hubEnv.Client.Get(ctx, client.ObjectKey{Namespace: pf.ns, Name: fwPlacement}, &pl); err != nil {
		pf.t.Fatal(err)
	}
	if err := hubEnv.Client.List(ctx, &sets); err != nil {
		pf.t.Fatal(err)
	}
	if err := hubEnv.Client.List(ctx, &bindings, client.InNamespace(pf.ns)); err != nil {
		pf.t.Fatal(err)
	}
	return &pl, sets.Items, bindings.Items
}

// writeDecision writes the placement's one PlacementDecision with clusters,
// as the Placement controller would.
func (pf *planFleet) writeDecision(clusters ...string) {
	f := &fedFleet{t: pf.t, ns: pf.ns}
	f.writeDecision(1, clusters...)
}

func (pf *planFleet) createWorkload(fw *fleetv1alpha1.FederatedWorkload) {
	pf.t.Helper()
	obj := fw.DeepCopy()
	if err := hubEnv.Client.Create(context.Background(), obj); err != nil {
		pf.t.Fatalf("creating FederatedWorkload: %v", err)
	}
	pf.t.Cleanup(func() {
		ctx := context.Background()
		_ = hubEnv.Client.Delete(ctx, obj)
		if err := hubEnv.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil {
			obj.Finalizers = nil
			_ = hubEnv.Client.Update(ctx, obj)
		}
	})
}

// change makes the user's edit: the workload's spec becomes to's.
func (pf *planFleet) change(to *fleetv1alpha1.FederatedWorkload) {
	pf.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fw := pf.workload()
		fw.Spec = *to.Spec.DeepCopy()
		return hubEnv.Client.Update(context.Background(), fw)
	})
	if err != nil {
		pf.t.Fatalf("changing the workload: %v", err)
	}
}

func (pf *planFleet) workload() *fleetv1alpha1.FederatedWorkload {
	pf.t.Helper()
	var fw fleetv1alpha1.FederatedWorkload
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: pf.ns, Name: fwName}, &fw); err != nil {
		pf.t.Fatal(err)
	}
	return &fw
}

func (pf *planFleet) deployment(name string) *unstructured.Unstructured {
	f := &fedFleet{t: pf.t, ns: pf.ns, envs: pf.envs}
	return f.deployment(name)
}

// lose cuts the hub off the member: its proxy closes, the probe finds it
// unreachable, and the placement drops it. It returns when its Ready
// condition turned False.
func (pf *planFleet) lose(name string) time.Time {
	pf.t.Helper()
	pf.proxies[name].close()
	mc := waitForReady(pf.t, name, metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonUnreachable, 30*time.Second)
	pf.cut[name] = true
	var placed []string
	for _, n := range pf.names {
		if !pf.cut[n] {
			placed = append(placed, n)
		}
	}
	pf.writeDecision(placed...)
	pf.rec.cutAt(name)
	return meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)).LastTransitionTime.Time
}

// reconcile runs one round of the hub and returns what it sent each member.
func (pf *planFleet) reconcile(where string) sentByMember {
	pf.t.Helper()
	pf.rec.take()
	_, err := pf.hub.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: pf.ns, Name: fwName}})
	if err != nil {
		pf.t.Fatalf("%s: the hub's round: %v", where, err)
	}
	return pf.rec.take()
}

// step plays every member's controllers as the plan does after a round: each
// takes the requests the hub sent it, acts, then a start-up time passes and
// it reports; what it reports is written into its apiserver (a lost member's
// too: it runs on, the hub just cannot see it).
func (pf *planFleet) step(sent []sentRequest) {
	pf.t.Helper()
	for _, r := range sent {
		if r.err == nil {
			pf.deliver(r)
		}
	}
	for _, name := range pf.names {
		if err := pf.sims[name].Act(); err != nil {
			pf.t.Fatal(err)
		}
	}
	for _, name := range pf.names {
		pf.sims[name].Settle()
		pf.sims[name].Report()
		pf.writeReport(name)
	}
}

// deliver gives a member's model the request its apiserver took, under the
// model's own UID and resourceVersion.
func (pf *planFleet) deliver(r sentRequest) {
	pf.t.Helper()
	sim := pf.sims[r.cluster]
	var err error
	switch r.op {
	case fleetsim.OpCreate:
		err = sim.Create(r.obj)
	case fleetsim.OpApply:
		obj := r.obj.DeepCopy()
		if held := sim.Get(); held != nil {
			obj.SetUID(held.GetUID())
		}
		err = sim.Apply(obj)
	case fleetsim.OpDelete:
		held := sim.Get()
		if held == nil {
			pf.t.Fatalf("%s: a delete the model has no object for", r.cluster)
		}
		err = sim.Delete(r.obj, held.GetUID(), held.GetResourceVersion())
	}
	if err != nil {
		pf.t.Fatalf("%s took %s, its model did not: %v", r.cluster, r.op, err)
	}
}

// writeReport writes what the member's model reported into its apiserver:
// the Deployment's revision annotation, its ReplicaSets, then its status, as
// the Deployment controller writes them. Generations are the apiserver's:
// a status that observed the model's generation observes the object's.
func (pf *planFleet) writeReport(name string) {
	pf.t.Helper()
	ctx := context.Background()
	cl := pf.envs[name].Client
	sim := pf.sims[name].Get()
	dep := pf.deployment(name)
	if sim == nil || dep == nil {
		return
	}
	if rev := sim.GetAnnotations()[deploymentRevisionAnnotation]; rev != "" && dep.GetAnnotations()[deploymentRevisionAnnotation] != rev {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, deploymentRevisionAnnotation, rev)
		if err := cl.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			pf.t.Fatalf("annotating the Deployment in %s: %v", name, err)
		}
	}
	pf.writeReplicaSets(name, dep, pf.sims[name].ReplicaSets())
	st, _, _ := unstructured.NestedMap(sim.Object, "status")
	st["observedGeneration"] = observed(st, sim.GetGeneration(), dep.GetGeneration())
	dep = pf.deployment(name)
	dep.Object["status"] = st
	if err := cl.Status().Update(ctx, dep); err != nil {
		pf.t.Fatalf("writing the Deployment status in %s: %v", name, err)
	}
}

const deploymentRevisionAnnotation = "deployment.kubernetes.io/revision"

// observed maps a status's observedGeneration from the model's generation
// (gen) to the object's (real): as many generations behind.
func observed(st map[string]any, gen, real int64) int64 {
	og, _, _ := unstructured.NestedInt64(st, "observedGeneration")
	return max(0, real-max(0, gen-og))
}

// writeReplicaSets makes the Deployment's ReplicaSets in its apiserver those
// of its model: same names, replicas, revisions and statuses, owned by the
// Deployment and matching its selector.
func (pf *planFleet) writeReplicaSets(name string, dep *unstructured.Unstructured, want []unstructured.Unstructured) {
	pf.t.Helper()
	ctx := context.Background()
	cl := pf.envs[name].Client
	sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
	tmpl, _, _ := unstructured.NestedMap(dep.Object, "spec", "template")
	keep := map[string]bool{}
	for _, m := range want {
		keep[m.GetName()] = true
		rs := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"spec": map[string]any{"replicas": m.Object["spec"].(map[string]any)["replicas"],
				"selector": map[string]any{"matchLabels": toAny(sel)}, "template": tmpl},
		}}
		rs.SetNamespace(dep.GetNamespace())
		rs.SetName(m.GetName())
		rs.SetLabels(sel)
		rs.SetAnnotations(m.GetAnnotations())
		rs.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.GetName(), UID: dep.GetUID()}})
		if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(rs), client.FieldOwner("test-deployment-controller"), client.ForceOwnership); err != nil {
			pf.t.Fatalf("writing ReplicaSet %s in %s: %v", m.GetName(), name, err)
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
			pf.t.Fatal(err)
		}
		st, _, _ := unstructured.NestedMap(m.Object, "status")
		st["observedGeneration"] = observed(st, m.GetGeneration(), rs.GetGeneration())
		st["readyReplicas"] = st["availableReplicas"]
		rs.Object["status"] = st
		if err := cl.Status().Update(ctx, rs); err != nil {
			pf.t.Fatalf("writing the status of ReplicaSet %s in %s: %v", m.GetName(), name, err)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apps/v1")
	list.SetKind("ReplicaSetList")
	if err := cl.List(ctx, list, client.InNamespace(dep.GetNamespace())); err != nil {
		pf.t.Fatal(err)
	}
	for i := range list.Items {
		if !keep[list.Items[i].GetName()] {
			if err := client.IgnoreNotFound(cl.Delete(ctx, &list.Items[i])); err != nil {
				pf.t.Fatal(err)
			}
		}
	}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A request's summary: what a member is told (its share, rollout fields,
// pod template revision and the hub's record), not how it is addressed (its
// UID, resourceVersion). A Delete is its name.
func requestSummary(op string, obj *unstructured.Unstructured) string {
	if op == fleetsim.OpDelete {
		return "Delete " + obj.GetName()
	}
	i := func(path ...string) any { v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); return v }
	ann := obj.GetAnnotations()
	return fmt.Sprintf("write replicas=%v paused=%v maxUnavailable=%v maxSurge=%v template=%s record=%s",
		i("spec", "replicas"), i("spec", "paused"), i("spec", "strategy", "rollingUpdate", "maxUnavailable"),
		i("spec", "strategy", "rollingUpdate", "maxSurge"), ann[fleetv1alpha1.AnnotationTemplateRevision], ann[fleetv1alpha1.AnnotationGrant])
}

func planRequests(reqs []fleetsim.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, requestSummary(r.Op, r.Object))
	}
	return out
}

func hubRequests(reqs []sentRequest) []string {
	var out []string
	for _, r := range reqs {
		if r.err == nil {
			out = append(out, requestSummary(r.op, r.obj))
		}
	}
	return out
}

// created: the requests made the member object.
func created(reqs []sentRequest) bool {
	return slices.ContainsFunc(reqs, func(r sentRequest) bool { return r.op == fleetsim.OpCreate && r.err == nil })
}

// stillActingNothing is a record's stillActing of a grant of nothing.
const stillActingNothing = `,"stillActing":{"started":true}`

// foldStillActing is writes without a record's stillActing of nothing,
// repeats folded.
func foldStillActing(writes []string) []string {
	var out []string
	for _, w := range writes {
		out = appendDistinct(out, strings.Replace(w, stillActingNothing, "", 1))
	}
	return out
}

// appendDistinct appends what differs from the last entry.
func appendDistinct(to []string, more ...string) []string {
	for _, s := range more {
		if len(to) == 0 || to[len(to)-1] != s {
			to = append(to, s)
		}
	}
	return to
}

// statusSummary is a workload status without times: the counts, every
// cluster's entry and the conditions' type, status, reason and message.
func statusSummary(st fleetv1alpha1.FederatedWorkloadStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d revision %s replicas %d updated %d available %d", st.ObservedGeneration, st.UpdateRevision,
		st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
	for _, c := range st.Clusters {
		js, _ := json.Marshal(c)
		fmt.Fprintf(&b, "\n  cluster %s", js)
	}
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// sentRequest is one request the hub made to a member.
type sentRequest struct {
	cluster, op string
	obj         *unstructured.Unstructured
	err         error
}

type sentByMember map[string][]sentRequest

func (s sentByMember) all() []sentRequest {
	var out []sentRequest
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range s {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, s[name]...)
	}
	return out
}

// recordingMembers hands out the registry's connections with a client that
// records every member object the hub creates, applies or deletes (what is
// sent, before the apiserver fills it in).
type recordingMembers struct {
	members.Clusters
	mu   sync.Mutex
	sent map[string][]sentRequest
	// lostAt counts, per member cut off, the requests it had been sent then.
	lostAt map[string]int
	all    map[string][]sentRequest
}

func (r *recordingMembers) Get(name string, kind schema.GroupVersionKind) (cluster.Cluster, bool) {
	c, ok := r.Clusters.Get(name, kind)
	if !ok {
		return nil, false
	}
	return &recordingCluster{Cluster: c, name: name, rec: r}, true
}

func (r *recordingMembers) record(s sentRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent[s.cluster] = append(r.sent[s.cluster], s)
	if r.all == nil {
		r.all = map[string][]sentRequest{}
	}
	r.all[s.cluster] = append(r.all[s.cluster], s)
}

// take returns what was sent since the last take.
func (r *recordingMembers) take() sentByMember {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := sentByMember(r.sent)
	r.sent = map[string][]sentRequest{}
	return out
}

func (r *recordingMembers) cutAt(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lostAt == nil {
		r.lostAt = map[string]int{}
	}
	r.lostAt[name] = len(r.all[name])
}

// after are the requests sent to a member since it was cut off, failed or not.
func (r *recordingMembers) after(name string) []sentRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all[name][r.lostAt[name]:]
}

type recordingCluster struct {
	cluster.Cluster
	name string
	rec  *recordingMembers
}

func (c *recordingCluster) GetClient() client.Client {
	return &recordingClient{Client: c.Cluster.GetClient(), name: c.name, rec: c.rec}
}

type recordingClient struct {
	client.Client
	name string
	rec  *recordingMembers
}

func (c *recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	u, isObject := obj.(*unstructured.Unstructured)
	if !isObject {
		return c.Client.Create(ctx, obj, opts...) // the namespace it goes in
	}
	sent := u.DeepCopy()
	err := c.Client.Create(ctx, obj, opts...)
	c.rec.record(sentRequest{cluster: c.name, op: fleetsim.OpCreate, obj: sent, err: err})
	return err
}

func (c *recordingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	js, err := json.Marshal(obj)
	sent := &unstructured.Unstructured{}
	if err == nil {
		err = sent.UnmarshalJSON(js)
	}
	if err != nil {
		return fmt.Errorf("recording an apply: %w", err)
	}
	err = c.Client.Apply(ctx, obj, opts...)
	c.rec.record(sentRequest{cluster: c.name, op: fleetsim.OpApply, obj: sent, err: err})
	return err
}

func (c *recordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	var sent *unstructured.Unstructured
	if u, ok := obj.(*unstructured.Unstructured); ok {
		sent = u.DeepCopy()
	}
	err := c.Client.Delete(ctx, obj, opts...)
	c.rec.record(sentRequest{cluster: c.name, op: fleetsim.OpDelete, obj: sent, err: err})
	return err
}
