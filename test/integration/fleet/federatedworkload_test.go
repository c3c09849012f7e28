package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The FederatedWorkload tests run the MemberCluster and FederatedWorkload
// controllers against two member apiservers that run no controllers. The test
// plays the rest: it writes the PlacementDecisions (the Placement controller)
// and the member Deployments' status (each member's Deployment controller,
// moving no faster than the limits the hub wrote).

const (
	fwName      = "web"
	fwPlacement = "web-placement"
	// fwStepTimeout bounds one step of a rollout; these tests check
	// budgets, not speed.
	fwStepTimeout = 90 * time.Second
)

// fedFleet is one test's hub, two MemberClusters and their member apiservers.
type fedFleet struct {
	t  *testing.T
	ns string
	// clusters are the MemberCluster names, sorted: clusters[0] is on
	// memberEnv, clusters[1] on member2Env.
	clusters []string
	envs     map[string]*testenv.Cluster
	// proxies, when proxied, are what the hub reaches each member through.
	proxies map[string]*proxy
	stopHub func()
	// statusImage is the image each member's Deployment status describes.
	statusImage map[string]string
	// wrapMembers, when set, is what the FederatedWorkload controller of the
	// next startHub reaches the members through.
	wrapMembers func(members.Clusters) members.Clusters
}

func newFedFleet(t *testing.T, prefix string, proxied bool) *fedFleet {
	t.Helper()
	return newFedFleetOn(t, prefix, proxied, memberEnv, member2Env)
}

// newFedFleetOn is newFedFleet with its two MemberClusters on envA and envB
// (the same cluster for both, registered twice, when envA is envB).
func newFedFleetOn(t *testing.T, prefix string, proxied bool, envA, envB *testenv.Cluster) *fedFleet {
	t.Helper()
	f := &fedFleet{t: t, ns: newOwnNamespace(t, prefix), clusters: []string{prefix + "-a", prefix + "-b"}, statusImage: map[string]string{}}
	f.envs = map[string]*testenv.Cluster{f.clusters[0]: envA, f.clusters[1]: envB}
	servers := map[string]string{}
	if proxied {
		f.proxies = map[string]*proxy{}
		for _, c := range f.clusters {
			f.proxies[c] = newProxy(t, f.envs[c].Config.Host)
			servers[c] = f.proxies[c].addr
		}
	}
	createSecret(t, f.ns+"-a", map[string][]byte{"kubeconfig": kubeconfigOf(t, envA, servers[f.clusters[0]])})
	createSecret(t, f.ns+"-b", map[string][]byte{"kubeconfig": kubeconfigOf(t, envB, servers[f.clusters[1]])})
	createMemberCluster(t, f.clusters[0], f.ns+"-a", map[string]string{"fw-test": f.ns, hubScope: f.ns, "weight": "2"})
	createMemberCluster(t, f.clusters[1], f.ns+"-b", map[string]string{"fw-test": f.ns, hubScope: f.ns, "weight": "3"})
	f.startHub()
	for _, c := range f.clusters {
		waitForReady(t, c, metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 20*time.Second)
	}
	pl := &fleetv1alpha1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fwPlacement},
		Spec:       fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fw-test": f.ns}}},
	}
	if err := hubEnv.Client.Create(context.Background(), pl); err != nil {
		t.Fatalf("creating Placement: %v", err)
	}
	f.writeDecision(1, f.clusters...)
	t.Cleanup(func() {
		for _, env := range f.envs {
			_ = env.Client.DeleteAllOf(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}, client.InNamespace(f.ns))
		}
	})
	return f
}

func kubeconfigOf(t *testing.T, env *testenv.Cluster, server string) []byte {
	t.Helper()
	data, err := env.Kubeconfig("hub")
	if err != nil {
		t.Fatal(err)
	}
	if server == "" {
		return data
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + server
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startHub runs the MemberCluster and FederatedWorkload controllers with a
// fresh member registry, as a restarted hub would.
func (f *fedFleet) startHub() {
	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	var fwMembers members.Clusters = reg
	if f.wrapMembers != nil {
		fwMembers = f.wrapMembers(reg)
	}
	f.stopHub = runScopedHub(f.t, f.ns, func(mgr ctrl.Manager) error {
		if err := (&membercluster.Reconciler{
			Client: mgr.GetClient(), Members: reg, Recorder: mgr.GetEventRecorder("test-membercluster"),
			ProbeInterval: testProbes.ProbeInterval, ProbeTimeout: testProbes.ProbeTimeout, FleetNamespace: testenv.FleetNamespace,
		}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&federatedworkload.Reconciler{
			Client: mgr.GetClient(), Members: fwMembers, Recorder: mgr.GetEventRecorder("test-federatedworkload"),
			RolloutPoll: 200 * time.Millisecond, Resync: time.Second,
			Analysis: &analysis.Measurer{PrometheusAddresses: []string{prom.Address}},
		}).SetupWithManager(mgr)
	})
}

// writeDecision writes PlacementDecision number n of the placement with the
// given clusters, in decision group 0, creating it when missing.
func (f *fedFleet) writeDecision(n int, clusters ...string) {
	f.t.Helper()
	f.writeGroupDecision(n, "", 0, clusters...)
}

func deploymentTemplate(image string) runtime.RawExtension {
	tmpl := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"labels": map[string]any{"app": fwName}},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": fwName}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": fwName}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}},
			},
		},
	}
	raw, _ := json.Marshal(tmpl)
	return runtime.RawExtension{Raw: raw}
}

func (f *fedFleet) createWorkload(replicas int32, mu, ms intstr.IntOrString, weights []fleetv1alpha1.ClusterWeight) {
	f.t.Helper()
	fw := &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fwName},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{
			PlacementRef:    fleetv1alpha1.PlacementReference{Name: fwPlacement},
			Replicas:        replicas,
			Template:        deploymentTemplate("web:1"),
			Division:        fleetv1alpha1.Division{Weights: weights},
			RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms},
		},
	}
	if err := hubEnv.Client.Create(context.Background(), fw); err != nil {
		f.t.Fatalf("creating FederatedWorkload: %v", err)
	}
	// Gone with the test, whether or not a hub still runs to clean up.
	f.t.Cleanup(func() {
		ctx := context.Background()
		_ = hubEnv.Client.Delete(ctx, fw)
		if err := hubEnv.Client.Get(ctx, client.ObjectKeyFromObject(fw), fw); err == nil {
			fw.Finalizers = nil
			_ = hubEnv.Client.Update(ctx, fw)
		}
	})
}

// createSettledWorkload creates the workload divided equally and plays both
// members' Deployment controllers until it is settled on its first template.
func (f *fedFleet) createSettledWorkload(replicas int32, mu, ms intstr.IntOrString) {
	f.t.Helper()
	f.createWorkload(replicas, mu, ms, nil)
	eventually(f.t, fwStepTimeout, "both member Deployments", func() (bool, string) {
		return f.deployment(f.clusters[0]) != nil && f.deployment(f.clusters[1]) != nil, ""
	})
	f.settle()
	f.ackUntil("the workload settled", complete)
}

func (f *fedFleet) workload() *fleetv1alpha1.FederatedWorkload {
	f.t.Helper()
	var fw fleetv1alpha1.FederatedWorkload
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: fwName}, &fw); err != nil {
		f.t.Fatal(err)
	}
	return &fw
}

// newImage is the image every Deployment rollout of these tests moves to.
const newImage = "web:2"

// startRollout moves the workload's template to newImage.
func (f *fedFleet) startRollout() {
	f.t.Helper()
	f.update("updating the template", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.Template = deploymentTemplate(newImage) })
}

// firstToStart acks the members until one of them satisfies started, and
// returns it and the other. Either may go first: a member whose status is
// stale when the rollout starts (its controller has not yet observed the
// hub's last write) is rightly passed over for the other.
func (f *fedFleet) firstToStart(what string, started func(dep) bool) (first, second string) {
	f.t.Helper()
	eventually(f.t, fwStepTimeout, "a member "+what, func() (bool, string) {
		f.ack()
		states := ""
		for i, c := range f.clusters {
			d := readDep(f.deployment(c))
			if started(d) {
				first, second = c, f.clusters[1-i]
				return true, ""
			}
			states += c + ": " + d.String() + "; "
		}
		return false, states
	})
	return first, second
}

// update changes the workload's spec, retrying when the hub wrote it in between.
func (f *fedFleet) update(what string, change func(*fleetv1alpha1.FederatedWorkload)) {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fw := f.workload()
		change(fw)
		return hubEnv.Client.Update(context.Background(), fw)
	})
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

// deployment is the member Deployment in cluster c, nil when absent.
func (f *fedFleet) deployment(c string) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	err := f.envs[c].Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: fwName}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatalf("reading the Deployment in %s: %v", c, err)
	}
	return u
}

// dep is what the test reads of a member Deployment.
type dep struct {
	exists                       bool
	uid                          types.UID
	generation, observed         int64
	replicas, mu, ms             int64
	paused                       bool
	image                        string
	stReplicas, stUpdated, stAvl int64
}

func readDep(u *unstructured.Unstructured) dep {
	if u == nil {
		return dep{}
	}
	i := func(path ...string) int64 { v, _, _ := unstructured.NestedInt64(u.Object, path...); return v }
	paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	image := ""
	if len(cs) > 0 {
		image, _ = cs[0].(map[string]any)["image"].(string)
	}
	return dep{
		exists: true, uid: u.GetUID(), generation: u.GetGeneration(), observed: i("status", "observedGeneration"),
		replicas: i("spec", "replicas"), mu: i("spec", "strategy", "rollingUpdate", "maxUnavailable"), ms: i("spec", "strategy", "rollingUpdate", "maxSurge"),
		paused: paused, image: image,
		stReplicas: i("status", "replicas"), stUpdated: i("status", "updatedReplicas"), stAvl: i("status", "availableReplicas"),
	}
}

func (d dep) String() string {
	if !d.exists {
		return "absent"
	}
	return fmt.Sprintf("replicas=%d image=%s paused=%t mu=%d ms=%d gen=%d/%d status=%d/%d/%d",
		d.replicas, d.image, d.paused, d.mu, d.ms, d.observed, d.generation, d.stReplicas, d.stUpdated, d.stAvl)
}

// setStatus writes a member Deployment's status as its controller would,
// observing the current generation.
func (f *fedFleet) setStatus(c string, replicas, updated, available int64) {
	f.t.Helper()
	f.writeStatus(c, replicas, updated, available, true)
}

// setStatusIfPresent is setStatus for a Deployment the hub may be deleting:
// gone, there is nothing to write.
func (f *fedFleet) setStatusIfPresent(c string, replicas, updated, available int64) {
	f.t.Helper()
	f.writeStatus(c, replicas, updated, available, false)
}

var errGone = errors.New("gone")

func (f *fedFleet) writeStatus(c string, replicas, updated, available int64, mustExist bool) {
	f.t.Helper()
	u := f.deployment(c)
	if u == nil {
		if mustExist {
			f.t.Fatalf("no Deployment in %s", c)
		}
		return
	}
	// Its ReplicaSets first, as their controller counts the pods before the
	// Deployment's does.
	f.setReplicaSets(c, u, replicas, updated, available)
	// The hub may write the spec in between: read again and retry.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if u = f.deployment(c); u == nil {
			return errGone
		}
		u.Object["status"] = map[string]any{
			"observedGeneration": u.GetGeneration(), "replicas": replicas, "updatedReplicas": updated,
			"availableReplicas": available, "readyReplicas": available,
		}
		return f.envs[c].Client.Status().Update(context.Background(), u)
	})
	switch {
	case (errors.Is(err, errGone) || apierrors.IsNotFound(err)) && !mustExist:
		// deleted between the read and the write: nothing to write
		return
	case err != nil:
		f.t.Fatalf("writing the Deployment status in %s: %v", c, err)
	}
	f.statusImage[c] = readDep(u).image
}

// setReplicaSets writes the member Deployment's ReplicaSets to match the
// status just written, caught up with their specs, as they would be once its
// pods exist: the new one (the Deployment's revision annotation, here its
// image) holds the updated pods, the old one the rest. The hub reads them to
// see what the Deployment asked for beyond its counts.
func (f *fedFleet) setReplicaSets(c string, d *unstructured.Unstructured, replicas, updated, available int64) {
	f.t.Helper()
	ctx := context.Background()
	cl := f.envs[c].Client
	rev := readDep(d).image
	if d.GetAnnotations()["deployment.kubernetes.io/revision"] != rev {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"deployment.kubernetes.io/revision":%q}}}`, rev)
		// gone meanwhile: the status write that follows finds out
		if err := cl.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch))); client.IgnoreNotFound(err) != nil {
			f.t.Fatalf("annotating the Deployment in %s: %v", c, err)
		}
	}
	newAvailable := min(updated, max(0, available-(replicas-updated)))
	for _, rs := range []struct {
		name, rev           string
		replicas, available int64
	}{{fwName + "-new", rev, updated, newAvailable}, {fwName + "-old", "old", replicas - updated, available - newAvailable}} {
		labels := map[string]any{"app": fwName}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"metadata": map[string]any{"namespace": f.ns, "name": rs.name, "labels": labels,
				"annotations":     map[string]any{"deployment.kubernetes.io/revision": rs.rev},
				"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": fwName, "uid": string(d.GetUID())}}},
			"spec": map[string]any{"replicas": rs.replicas, "selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web"}}}}},
		}}
		if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test-deployment-controller"), client.ForceOwnership); err != nil {
			f.t.Fatalf("writing ReplicaSet %s in %s: %v", rs.name, c, err)
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			f.t.Fatalf("reading ReplicaSet %s in %s: %v", rs.name, c, err)
		}
		u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "replicas": rs.replicas, "readyReplicas": rs.available, "availableReplicas": rs.available}
		if err := cl.Status().Update(ctx, u); err != nil {
			f.t.Fatalf("writing the status of ReplicaSet %s in %s: %v", rs.name, c, err)
		}
	}
}

// settle plays both members' Deployment controllers to the end of whatever
// they hold: every pod of the held template, available.
func (f *fedFleet) settle() {
	f.t.Helper()
	for _, c := range f.clusters {
		d := readDep(f.deployment(c))
		f.setStatus(c, d.replicas, d.replicas, d.replicas)
	}
}

// ack plays the members' Deployment controllers observing their spec without
// moving any pod: what a paused Deployment, or one with nothing to replace,
// does.
func (f *fedFleet) ack() {
	f.t.Helper()
	for _, c := range f.clusters {
		d := readDep(f.deployment(c))
		if !d.exists || d.observed >= d.generation {
			continue
		}
		updated := d.stUpdated
		if f.statusImage[c] != d.image {
			updated = 0 // a new template: none of the pods runs it yet
		}
		f.setStatus(c, d.stReplicas, updated, d.stAvl)
	}
}

// ackUntil acks the members' specs until the workload satisfies cond.
// settleUntil plays the members' Deployment controllers, a step at a time,
// until cond holds: a member whose replicas changed first runs them with its
// new pods not yet available, and only at the next step are they available.
// cond sees every step.
func (f *fedFleet) settleUntil(what string, cond func(*fleetv1alpha1.FederatedWorkload) bool) *fleetv1alpha1.FederatedWorkload {
	f.t.Helper()
	return f.waitForCondition(what, func(fw *fleetv1alpha1.FederatedWorkload) bool {
		done := cond(fw)
		for _, c := range f.clusters {
			d := readDep(f.deployment(c))
			avl := d.replicas
			if d.stReplicas != d.replicas || d.observed < d.generation {
				avl = min(d.stAvl, d.replicas)
			}
			f.setStatus(c, d.replicas, d.replicas, avl)
		}
		return done
	})
}

func (f *fedFleet) ackUntil(what string, cond func(*fleetv1alpha1.FederatedWorkload) bool) *fleetv1alpha1.FederatedWorkload {
	f.t.Helper()
	return f.waitForCondition(what, func(fw *fleetv1alpha1.FederatedWorkload) bool {
		f.ack()
		return cond(fw)
	})
}

func (f *fedFleet) waitForCondition(what string, cond func(*fleetv1alpha1.FederatedWorkload) bool) *fleetv1alpha1.FederatedWorkload {
	f.t.Helper()
	var fw *fleetv1alpha1.FederatedWorkload
	eventually(f.t, fwStepTimeout, what, func() (bool, string) {
		fw = f.workload()
		p := meta.FindStatusCondition(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
		state := fmt.Sprintf("status %d/%d/%d clusters %+v", fw.Status.Replicas, fw.Status.UpdatedReplicas, fw.Status.AvailableReplicas, fw.Status.Clusters)
		if p != nil {
			state += " progressing " + p.Reason + ": " + p.Message
		}
		return cond(fw), state
	})
	return fw
}

func progressing(fw *fleetv1alpha1.FederatedWorkload) *metav1.Condition {
	c := meta.FindStatusCondition(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
	if c == nil {
		return &metav1.Condition{}
	}
	return c
}

func complete(fw *fleetv1alpha1.FederatedWorkload) bool {
	return fw.Status.ObservedGeneration == fw.Generation && progressing(fw).Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete)
}

// A workload is split by weight 2:3 over two members, written by server-side
// apply as lockstep-fleet, and the hub takes back a share someone edits.
func TestFederatedWorkload_PropagatesSharesAndReassertsThem(t *testing.T) {
	f := newFedFleet(t, "fw-prop", false)
	sel := func(w string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"weight": w}}
	}
	f.createWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1), []fleetv1alpha1.ClusterWeight{
		{ClusterSelector: sel("2"), Weight: 2}, {ClusterSelector: sel("3"), Weight: 3},
	})
	want := map[string]int64{f.clusters[0]: 4, f.clusters[1]: 6}
	for c, n := range want {
		eventually(t, fwStepTimeout, fmt.Sprintf("Deployment with %d replicas in %s", n, c), func() (bool, string) {
			d := readDep(f.deployment(c))
			return d.exists && d.replicas == n && d.image == "web:1", d.String()
		})
		u := f.deployment(c)
		if got := u.GetLabels()[fleetv1alpha1.LabelFederatedWorkload]; got != f.ns+"."+fwName {
			t.Errorf("%s: label %s=%q", c, fleetv1alpha1.LabelFederatedWorkload, got)
		}
		// The first write is a create (it fails when the name is taken); the
		// rounds after it apply.
		eventually(t, fwStepTimeout, "fields applied by "+federatedworkload.FieldManager+" in "+c, func() (bool, string) {
			u := f.deployment(c)
			for _, mf := range u.GetManagedFields() {
				if mf.Manager == federatedworkload.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", u.GetManagedFields())
		})
	}
	f.settle()
	fw := f.ackUntil("the workload settled", complete)
	if fw.Status.AvailableReplicas != 10 || len(fw.Status.Clusters) != 2 || fw.Status.Clusters[0].DesiredReplicas != 4 {
		t.Errorf("status %+v", fw.Status)
	}

	// Someone scales the member object by hand; the hub takes the field back.
	// The edit retries on a conflict, as kubectl edit would: the hub and the
	// test's stand-in for the member's controller write the object too.
	c := f.clusters[0]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := f.deployment(c)
		_ = unstructured.SetNestedField(u.Object, int64(9), "spec", "replicas")
		return f.envs[c].Client.Update(context.Background(), u, client.FieldOwner("kubectl-edit"))
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, fwStepTimeout, "the hub re-asserts replicas 4 in "+c, func() (bool, string) {
		d := readDep(f.deployment(c))
		return d.replicas == 4, d.String()
	})
}

// budget is the most the members' written grants and reported statuses let
// be unavailable and above the global replicas, summed over the fleet.
func budget(ds []dep) (unavailable, surge int64) {
	for _, d := range ds {
		u := d.replicas - d.stAvl
		s := d.stReplicas - d.replicas
		// A member whose every pod runs the newest template, as its
		// controller has seen its spec, has no pod left to make or take
		// down: its limits cannot be spent, so only what it has down or
		// above its share counts (as the hub charges it). The round that
		// pauses it may grant the next member, and the two writes go out
		// side by side: the grant can land first.
		finished := d.image == newImage && d.observed == d.generation && d.stUpdated >= d.replicas
		if !d.paused && !finished {
			u = max(u, min(d.mu, d.replicas))
			s = max(s, d.ms)
		}
		unavailable += max(0, u)
		surge += max(0, s)
	}
	return unavailable, surge
}

// The budget check charges an unpaused member its limits while it has pods
// left to replace, or while its controller has not seen its spec; only a
// member whose every pod runs the newest template is charged what it has
// down and above its share.
func TestBudget_ChargesLimitsUntilAMemberHasNothingLeftToReplace(t *testing.T) {
	finished := dep{exists: true, generation: 5, observed: 5, replicas: 5, mu: 2, ms: 1, image: newImage, stReplicas: 5, stUpdated: 5, stAvl: 5}
	midway := finished
	midway.stUpdated = 3
	unseen := finished
	unseen.generation = 6
	oldTemplate := finished
	oldTemplate.image = "web:1"
	for _, c := range []struct {
		name         string
		d            dep
		wantU, wantS int64
	}{
		{"finished", finished, 0, 0},
		{"pods left to replace", midway, 2, 1},
		{"spec not yet seen", unseen, 2, 1},
		{"older template", oldTemplate, 2, 1},
	} {
		if u, s := budget([]dep{c.d}); u != c.wantU || s != c.wantS {
			t.Errorf("%s: charged %d unavailable and %d surge, want %d and %d", c.name, u, s, c.wantU, c.wantS)
		}
	}
}

// rollout plays both members' Deployment controllers until the workload
// completes: a member that has observed its spec and may move replaces up to
// maxUnavailable+maxSurge pods (they are unavailable, and surge above its
// share) and reports; at its next step they turn available. After every step
// the grants and statuses must stay inside the global budget (the workload's
// integer limits). onStep runs
// after each step with the number of steps so far.
func (f *fedFleet) rollout(onStep func(step int, ds []dep)) {
	f.t.Helper()
	rs := f.workload().Spec.RolloutStrategy
	mu, ms := int64(rs.MaxUnavailable.IntValue()), int64(rs.MaxSurge.IntValue())
	deadline := time.Now().Add(90 * time.Second)
	inFlight := map[string]bool{}
	for step := 0; ; step++ {
		if time.Now().After(deadline) {
			f.t.Fatalf("the rollout did not complete in 90s")
		}
		fw := f.workload()
		if complete(fw) && fw.Status.UpdatedReplicas == fw.Spec.Replicas && fw.Status.AvailableReplicas == fw.Spec.Replicas {
			return
		}
		var ds []dep
		for _, c := range f.clusters {
			ds = append(ds, readDep(f.deployment(c)))
		}
		f.t.Logf("step %d: %v %v | %s", step, f.clusters, ds, progressing(fw).Message)
		if u, s := budget(ds); u > mu || s > ms {
			f.t.Fatalf("step %d: the fleet may have %d unavailable and %d surge, limits %d and %d: %v", step, u, s, mu, ms, ds)
		}
		if onStep != nil {
			onStep(step, ds)
		}
		moved := false
		for i, c := range f.clusters {
			d := ds[i]
			switch {
			case !d.exists:
			case inFlight[c]:
				f.setStatus(c, d.replicas, d.stUpdated, d.replicas)
				inFlight[c], moved = false, true
			case d.observed < d.generation:
				f.ack()
				moved = true
			case d.image == newImage && !d.paused && d.stUpdated < d.replicas:
				k := min(d.replicas-d.stUpdated, d.mu+d.ms)
				down := min(d.mu, k)
				f.setStatus(c, d.replicas+min(d.ms, k), d.stUpdated+k, d.replicas-down)
				inFlight[c], moved = true, true
			}
		}
		if !moved {
			// nothing to play: wait for the hub's next round to change something
			before := fw.Status
			eventually(f.t, fwStepTimeout, "the hub's next round", func() (bool, string) {
				now := f.workload()
				changed := fmt.Sprint(now.Status.Clusters) != fmt.Sprint(before.Clusters) || progressing(now).Reason != progressing(fw).Reason
				for i, c := range f.clusters {
					if readDep(f.deployment(c)).generation != ds[i].generation {
						changed = true
					}
				}
				return changed, fmt.Sprintf("%v %s", now.Status.Clusters, progressing(now).Message)
			})
		}
	}
}

// Story 1 over two members (10 pods split 5/5, maxUnavailable 2, maxSurge 1):
// a Deployment member takes its whole share, so the second holds the old
// template, paused, until the first is done; the fleet stays within the
// global budget at every step. Either member may go first: one whose status
// is stale when the rollout starts is passed over for the other.
func TestFederatedWorkload_DeploymentRolloutKeepsTheGlobalBudget(t *testing.T) {
	f := newFedFleet(t, "fw-budget", false)
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))

	f.startRollout()
	first, overlap := -1, ""
	finished := func(d dep) bool {
		return d.image == "web:2" && d.stUpdated == d.replicas && d.stAvl == d.replicas
	}
	f.rollout(func(step int, ds []dep) {
		for i, d := range ds {
			if first < 0 && d.image == "web:2" {
				first = i
			}
		}
		if first < 0 || overlap != "" {
			return
		}
		second := 1 - first
		if ds[second].image == "web:2" && !finished(ds[first]) {
			overlap = fmt.Sprintf("step %d: %s got the new template before %s finished: the budget was spent twice: %v",
				step, f.clusters[second], f.clusters[first], ds)
		}
	})
	if overlap != "" {
		t.Error(overlap)
	}
	fw := f.workload()
	for _, c := range fw.Status.Clusters {
		if !c.Grant.Started || c.UpdatedReplicas != 5 {
			t.Errorf("cluster %s at the end: %+v", c.Name, c)
		}
	}
}

// A member that stops answering mid-rollout keeps being charged the grant it
// holds: the other member gets nothing new until it is back, and the status
// says which cluster is stale.
func TestFederatedWorkload_UnreachableMemberIsChargedAndGetsNothingNew(t *testing.T) {
	f := newFedFleet(t, "fw-lost", true)
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))

	f.startRollout()
	a, b := f.firstToStart("started with budget", func(d dep) bool {
		return d.image == "web:2" && !d.paused && d.mu == 2
	})
	// a has observed its grant; it is about to replace pods when it goes away.
	f.setStatus(a, 5, 0, 5)
	f.proxies[a].close()
	waitForReady(t, a, metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonUnreachable, 30*time.Second)
	f.waitForCondition("status naming "+a+" stale", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return strings.Contains(progressing(fw).Message, "cluster "+a+": status stale")
	})
	// Several rounds (the hub polls every 200ms) must leave b untouched.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		d := readDep(f.deployment(b))
		if d.image != "web:1" || !d.paused {
			t.Fatalf("%s got budget while %s was unreachable and held it: %v", b, a, d)
		}
		fw := f.workload()
		for _, c := range fw.Status.Clusters {
			if c.Name == a && (!c.Grant.Started || c.Grant.MaxUnavailable != 2 || c.Grant.MaxSurge != 1) {
				t.Fatalf("the unreachable member's grant changed: %+v", c)
			}
		}
		time.Sleep(100 * time.Millisecond) // pacing the checks of a negative, not synchronisation
	}

	f.proxies[a].open()
	waitForReady(t, a, metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 30*time.Second)
	f.rollout(nil)
}

// A member whose controller has not yet observed its latest grant may still
// act on the one before: it is charged for both. Here a holds a surge it may
// use again (one pod replaced, more to go) when the workload is paused; its
// controller does not see the pause before the workload is resumed. The
// resumed round must not hand b the surge a may still use: with maxSurge 1
// both could start a pod above their share.
func TestFederatedWorkload_MemberStillActingOnAnOlderGrantKeepsItsCharge(t *testing.T) {
	f := newFedFleet(t, "fw-acting", false)
	f.createSettledWorkload(10, intstr.FromInt32(0), intstr.FromInt32(1))

	f.startRollout()
	a, b := f.firstToStart("started with the surge", func(d dep) bool {
		return d.image == newImage && !d.paused && d.ms == 1 && d.observed == d.generation
	})
	// a replaced one pod: it runs its share again, one pod new, and may surge again.
	share := readDep(f.deployment(a)).replicas
	f.setStatus(a, share, 1, share)

	f.update("pausing", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.RolloutStrategy.Paused = true })
	f.waitForCondition("the pause written to "+a, func(fw *fleetv1alpha1.FederatedWorkload) bool {
		c := clusterStatus(fw, a)
		return fw.Status.ObservedGeneration == fw.Generation && c != nil && c.Grant.Paused && readDep(f.deployment(a)).paused
	})
	f.update("resuming", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.RolloutStrategy.Paused = false })
	fw := f.waitForCondition("the resumed round", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return fw.Status.ObservedGeneration == fw.Generation && !meta.IsStatusConditionTrue(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadPaused))
	})
	if c := clusterStatus(fw, a); c == nil || c.StillActing == nil || c.StillActing.MaxSurge != 1 {
		t.Errorf("%s's status does not say it may still act on its surge: %+v", a, c)
	}
	// Several rounds (the hub polls every 200ms) must leave b without budget
	// while a has not observed the pause.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if d := readDep(f.deployment(b)); d.image == newImage && !d.paused && d.ms > 0 {
			t.Fatalf("%s got the surge while %s may still use it: %s: %v; %s: %v", b, a, b, d, a, readDep(f.deployment(a)))
		}
		time.Sleep(100 * time.Millisecond) // pacing the checks of a negative, not synchronisation
	}
	f.rollout(nil)
}

// The hub stopped mid-rollout and started again (a fresh process: no memory)
// carries on from the member objects: the grant in flight is kept and the
// rollout completes within the budget.
func TestFederatedWorkload_RestartedHubResumesFromTheObjects(t *testing.T) {
	f := newFedFleet(t, "fw-restart", false)
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))
	f.startRollout()
	restarted := false
	f.rollout(func(_ int, ds []dep) {
		first := -1
		for i, d := range ds {
			if d.image == "web:2" && d.stUpdated > 0 && d.stUpdated < d.replicas {
				first = i
			}
		}
		if restarted || first < 0 {
			return
		}
		// One member is mid-rollout (either may go first): stop the hub,
		// check nothing moved, start another.
		f.stopHub()
		restarted = true
		second := f.clusters[1-first]
		before := readDep(f.deployment(second))
		f.startHub()
		for _, c := range f.clusters {
			waitForReady(t, c, metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 20*time.Second)
		}
		f.waitForCondition("a round of the new hub", func(fw *fleetv1alpha1.FederatedWorkload) bool {
			return progressing(fw).Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress)
		})
		after := readDep(f.deployment(second))
		if after.image != "web:1" || !after.paused || after.uid != before.uid {
			t.Errorf("the restarted hub started %s while %s was mid-rollout: %v", second, f.clusters[first], after)
		}
	})
	if !restarted {
		t.Fatal("the rollout never reached the point where the hub is restarted")
	}
}

// Clusters moving between PlacementDecisions (a re-shard, surge then
// finalize) keep their member objects: never deleted, never recreated.
func TestFederatedWorkload_ReshardKeepsMemberObjects(t *testing.T) {
	f := newFedFleet(t, "fw-reshard", false)
	f.createSettledWorkload(6, intstr.FromInt32(1), intstr.FromInt32(0))
	uids := map[string]types.UID{}
	for _, c := range f.clusters {
		uids[c] = f.deployment(c).GetUID()
	}
	a, b := f.clusters[0], f.clusters[1]
	f.writeDecision(2, b)    // surge: b in both slices
	f.writeDecision(1, a)    // finalize: b only in the second
	f.writeDecision(2, a, b) // and back into one slice, a in both for a moment
	f.writeDecision(1)
	// For three seconds (three resyncs of the hub) the objects stay the same.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range f.clusters {
			d := f.deployment(c)
			if d == nil || d.GetUID() != uids[c] || !d.GetDeletionTimestamp().IsZero() {
				t.Fatalf("the member object in %s was deleted or recreated during a re-shard: %v", c, readDep(d))
			}
		}
		time.Sleep(100 * time.Millisecond) // pacing the checks of a negative, not synchronisation
	}
	if fw := f.workload(); len(fw.Status.Clusters) != 2 || fw.Status.Clusters[0].DesiredReplicas != 3 {
		t.Errorf("status after the re-shard: %+v", fw.Status.Clusters)
	}
}

// A cluster that leaves the placement hands its pods over surge-first: the
// other member grows to the whole workload (within maxSurge) while the leaver
// gives up no more than maxUnavailable allows; once the grown pods are
// available the leaver shrinks to 0, and only then is its object deleted.
func TestFederatedWorkload_LeavingClusterMovesItsPodsFirst(t *testing.T) {
	f := newFedFleet(t, "fw-leave", false)
	// maxSurge 3: the leaving member's whole share can grow elsewhere first.
	f.createSettledWorkload(6, intstr.FromInt32(1), intstr.FromInt32(3))
	a, b := f.clusters[0], f.clusters[1]
	// a no longer matches the placement's selector, and the placement drops it
	f.relabel(a, "fw-test", "elsewhere")
	f.writeDecision(1, b)
	// The members' controllers observe what the hub writes (its last round
	// on the settled workload may have written to either after the test
	// saw it complete; a member that has not observed it is stale, and the
	// hub moves nothing until it has).
	eventually(t, fwStepTimeout, b+" grown to 6", func() (bool, string) {
		f.ack()
		d := readDep(f.deployment(b))
		return d.replicas == 6, d.String()
	})
	// Until b's new pods are available, a may give up only what
	// maxUnavailable allows (1 of its 3).
	if d := readDep(f.deployment(a)); d.replicas < 2 {
		t.Fatalf("%s shrank beyond maxUnavailable before %s had grown: %v", a, b, d)
	}
	f.settleUntil(a+" scaled to 0", func(*fleetv1alpha1.FederatedWorkload) bool {
		return readDep(f.deployment(a)).replicas == 0
	})
	// settleUntil may have written this already, and the hub deleted the object
	f.setStatusIfPresent(a, 0, 0, 0)
	eventually(t, fwStepTimeout, a+"'s member object deleted", func() (bool, string) {
		return f.deployment(a) == nil, readDep(f.deployment(a)).String()
	})
	fw := f.ackUntil("the workload settled on one cluster", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return complete(fw) && len(fw.Status.Clusters) == 1
	})
	if fw.Status.Clusters[0].Name != b {
		t.Errorf("clusters %+v", fw.Status.Clusters)
	}
}

// relabel sets one label of MemberCluster c.
func (f *fedFleet) relabel(c, key, value string) {
	f.t.Helper()
	// The hub writes the MemberCluster's status meanwhile; retry on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var mc fleetv1alpha1.MemberCluster
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Name: c}, &mc); err != nil {
			return err
		}
		mc.Labels[key] = value
		return hubEnv.Client.Update(context.Background(), &mc)
	})
	if err != nil {
		f.t.Fatalf("relabelling %s: %v", c, err)
	}
}

// setLostTimeout sets the workload's memberLostTimeoutSeconds.
func (f *fedFleet) setLostTimeout(seconds int32) {
	f.t.Helper()
	f.update("setting memberLostTimeoutSeconds", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.MemberLostTimeoutSeconds = &seconds })
}

// clusterStatus is the workload's status entry of cluster c, nil when absent.
func clusterStatus(fw *fleetv1alpha1.FederatedWorkload, c string) *fleetv1alpha1.FederatedClusterStatus {
	for i := range fw.Status.Clusters {
		if fw.Status.Clusters[i].Name == c {
			return &fw.Status.Clusters[i]
		}
	}
	return nil
}

// A member that stops answering leaves its placement (placements select Ready
// members only), but it keeps its share and its charge until
// memberLostTimeoutSeconds: the other member neither grows nor gets budget.
// Once lost it is charged its whole share, the other grows to the whole
// workload first, and only then is the lost member forgotten and the rollout
// carries on over the members that answer.
func TestFederatedWorkload_UnreachableMemberKeepsItsShareUntilLost(t *testing.T) {
	f := newFedFleet(t, "fw-keep", true)
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))
	const lostAfter = 6
	f.setLostTimeout(lostAfter)

	f.startRollout()
	a, b := f.firstToStart("started with budget", func(d dep) bool {
		return d.image == "web:2" && !d.paused && d.mu == 2
	})
	f.setStatus(a, 5, 0, 5)
	f.proxies[a].close()
	mc := waitForReady(t, a, metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonUnreachable, 30*time.Second)
	notReadySince := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)).LastTransitionTime.Time
	f.writeDecision(1, b) // what the Placement controller does with a member that is not Ready

	// Until the timeout a keeps its share of 5 and its grant, and b is left alone.
	f.waitForCondition("status naming "+a+" stale", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return strings.Contains(progressing(fw).Message, "cluster "+a+": status stale")
	})
	for time.Now().Before(notReadySince.Add((lostAfter - 2) * time.Second)) {
		if d := readDep(f.deployment(b)); d.replicas != 5 || d.image != "web:1" || !d.paused {
			t.Fatalf("%s took over %s's share or budget before %s was lost: %v", b, a, a, d)
		}
		if e := clusterStatus(f.workload(), a); e == nil || e.DesiredReplicas != 5 || !e.Grant.Started || e.Grant.MaxUnavailable != 2 {
			t.Fatalf("the unreachable member's share or grant changed before the timeout: %+v", e)
		}
		time.Sleep(100 * time.Millisecond) // pacing the checks of a negative, not synchronisation
	}

	// Lost: b grows to the whole workload on the template it holds, with no
	// budget (a's whole share counts as unavailable).
	fw := f.waitForCondition(a+" charged as lost", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return strings.Contains(progressing(fw).Message, "cluster "+a+": unreachable")
	})
	if e := clusterStatus(fw, a); e == nil || e.DesiredReplicas != 5 {
		t.Fatalf("the lost member left the status before the others grew: %+v", fw.Status.Clusters)
	}
	// b's controller observes what the hub wrote it: a write of the rollout's
	// start that landed after the last ack (a loaded machine) otherwise leaves
	// b's status stale, and the hub rightly waits for it.
	eventually(t, fwStepTimeout, b+" grown to 10", func() (bool, string) {
		f.ack()
		d := readDep(f.deployment(b))
		return d.replicas == 10, d.String()
	})
	if d := readDep(f.deployment(b)); d.image != "web:1" || !d.paused {
		t.Fatalf("%s got budget while %s's whole share counted as unavailable: %v", b, a, d)
	}
	f.setStatus(b, 10, 10, 10)
	// Once b runs the whole workload the surge budget is free, so the hub may
	// start b before it forgets a: b's controller keeps observing meanwhile.
	f.ackUntil(a+" forgotten once "+b+" holds the whole workload", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return clusterStatus(fw, a) == nil
	})
	f.clusters = []string{b}
	f.rollout(nil)
	if d := readDep(f.deployment(b)); d.replicas != 10 || d.stUpdated != 10 {
		t.Errorf("%s at the end: %v", b, d)
	}
}

// A cluster that joins while the rollout holds units back (partition 4 of 6:
// no Deployment member's whole share fits the 2 units allowed) never lets the
// fleet run more than replicas − partition units of the new template. The
// joining member runs nothing yet, so it starts on the new template at once
// (a Deployment created paused would never make a pod: it makes no
// ReplicaSet while paused), and its share grows only as far as the partition
// allows; the member that holds units back keeps them old, and the division
// waits for the partition to be lowered.
func TestFederatedWorkload_AClusterJoiningUnderAPartitionAddsNoNewUnitBeyondIt(t *testing.T) {
	f := newFedFleet(t, "fw-join", false)
	a, b := f.clusters[0], f.clusters[1]
	f.writeDecision(1, a)
	f.createWorkload(6, intstr.FromInt32(1), intstr.FromInt32(0), nil)
	eventually(t, fwStepTimeout, "the Deployment in "+a, func() (bool, string) {
		d := readDep(f.deployment(a))
		return d.replicas == 6, d.String()
	})
	f.setStatus(a, 6, 6, 6)
	f.waitForCondition("the workload settled", complete)

	f.update("starting a rollout with partition 4", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.Template = deploymentTemplate("web:2")
		fw.Spec.RolloutStrategy.Partition = 4
	})
	f.waitForCondition("a round on the new template", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return fw.Status.ObservedGeneration == fw.Generation
	})
	if d := readDep(f.deployment(a)); d.image != "web:1" || !d.paused {
		t.Fatalf("%s started although its share of 6 does not fit 2: %v", a, d)
	}

	f.writeDecision(1, a, b)
	eventually(t, fwStepTimeout, "the Deployment in "+b, func() (bool, string) {
		d := readDep(f.deployment(b))
		return d.exists, d.String()
	})
	newUnits := func(ds ...dep) int64 {
		var n int64
		for _, d := range ds {
			if d.image == "web:2" {
				n += d.replicas
			}
		}
		return n
	}
	// With maxSurge 0 the share moves a unit at a time within maxUnavailable
	// 1: a shrinks, then b grows, never past the partition.
	fw := f.settleUntil("both members settled within the partition", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		da, db := readDep(f.deployment(a)), readDep(f.deployment(b))
		if da.replicas+db.replicas > 6 || da.replicas+db.replicas < 5 || newUnits(da, db) > 2 {
			t.Fatalf("%s joined outside the budget (6 units, at least 5, at most 2 new): %v; %s: %v", b, db, a, da)
		}
		// The division cannot finish (3 and 3) until the partition is
		// lowered: b's third unit would be a third new one, and a's units
		// stay old. The workload rests at the partition and says so.
		return len(fw.Status.Clusters) == 2 && fw.Status.AvailableReplicas == 6 && fw.Status.UpdatedReplicas == 2 &&
			strings.Contains(progressing(fw).Message, "the partition leaves room for 0 more updated units")
	})
	da, db := readDep(f.deployment(a)), readDep(f.deployment(b))
	if da.image != "web:1" {
		t.Errorf("%s runs %s; its units are the ones the partition holds back", a, da.image)
	}
	if fw.Status.UpdatedReplicas > 2 || newUnits(da, db) > 2 {
		t.Errorf("%d units updated (%d on the new template), want at most replicas − partition = 2", fw.Status.UpdatedReplicas, newUnits(da, db))
	}
	t.Logf("settled: %s %v, %s %v, %d updated", a, da, b, db, fw.Status.UpdatedReplicas)
}

func statefulSetTemplate(image string) runtime.RawExtension {
	tmpl := map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"spec": map[string]any{
			"serviceName": fwName,
			"selector":    map[string]any{"matchLabels": map[string]any{"app": fwName}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": fwName}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "db", "image": image}}},
			},
		},
	}
	raw, _ := json.Marshal(tmpl)
	return runtime.RawExtension{Raw: raw}
}

// sts is what the test reads of a member StatefulSet.
type sts struct {
	exists                             bool
	generation, observed               int64
	replicas, partition                int64
	image                              string
	stReplicas, stUpdated, stAvailable int64
}

func (f *fedFleet) statefulSet(c string) (*unstructured.Unstructured, sts) {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("StatefulSet")
	err := f.envs[c].Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: fwName}, u)
	if apierrors.IsNotFound(err) {
		return nil, sts{}
	}
	if err != nil {
		f.t.Fatalf("reading the StatefulSet in %s: %v", c, err)
	}
	i := func(path ...string) int64 { v, _, _ := unstructured.NestedInt64(u.Object, path...); return v }
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	image, _ := cs[0].(map[string]any)["image"].(string)
	return u, sts{
		exists: true, generation: u.GetGeneration(), observed: i("status", "observedGeneration"),
		replicas: i("spec", "replicas"), partition: i("spec", "updateStrategy", "rollingUpdate", "partition"), image: image,
		stReplicas: i("status", "replicas"), stUpdated: i("status", "updatedReplicas"), stAvailable: i("status", "availableReplicas"),
	}
}

// setStatefulSetStatus writes a member StatefulSet's status, observing its
// current generation.
func (f *fedFleet) setStatefulSetStatus(c string, replicas, updated, available int64) {
	f.t.Helper()
	u, s := f.statefulSet(c)
	u.Object["status"] = map[string]any{
		"observedGeneration": u.GetGeneration(), "replicas": replicas, "updatedReplicas": updated,
		"availableReplicas": available, "readyReplicas": available, "currentReplicas": replicas - updated,
	}
	if err := f.envs[c].Client.Status().Update(context.Background(), u); err != nil {
		f.t.Fatalf("writing the StatefulSet status in %s: %v", c, err)
	}
	f.statusImage[c] = s.image
}

// Story 2 with StatefulSets (6 pods split 3/3, partition 2, maxUnavailable 1):
// the hub lowers one member's partition a unit at a time, the other waits, a
// partition never rises, and exactly 4 pods end on the new revision.
func TestFederatedWorkload_StatefulSetPartitionIsExactAndNeverRises(t *testing.T) {
	f := newFedFleet(t, "fw-sts", false)
	t.Cleanup(func() {
		for _, env := range f.envs {
			_ = env.Client.DeleteAllOf(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet"}}, client.InNamespace(f.ns))
		}
	})
	mu, ms := intstr.FromInt32(1), intstr.FromInt32(0)
	fw := &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fwName},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{
			PlacementRef: fleetv1alpha1.PlacementReference{Name: fwPlacement}, Replicas: 6,
			Template:        statefulSetTemplate("db:1"),
			RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms},
		},
	}
	if err := hubEnv.Client.Create(context.Background(), fw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hubEnv.Client.Delete(context.Background(), fw)
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKeyFromObject(fw), fw); err == nil {
			fw.Finalizers = nil
			_ = hubEnv.Client.Update(context.Background(), fw)
		}
	})
	for _, c := range f.clusters {
		eventually(t, fwStepTimeout, "a StatefulSet of 3 in "+c, func() (bool, string) {
			_, s := f.statefulSet(c)
			return s.exists && s.replicas == 3 && s.partition == 0, fmt.Sprintf("%+v", s)
		})
		f.setStatefulSetStatus(c, 3, 3, 3)
	}
	f.waitForCondition("the workload settled", complete)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fw = f.workload()
		fw.Spec.Template = statefulSetTemplate("db:2")
		fw.Spec.RolloutStrategy.Partition = 2
		return hubEnv.Client.Update(context.Background(), fw)
	})
	if err != nil {
		t.Fatal(err)
	}
	lowest := map[string]int64{}
	deadline := time.Now().Add(90 * time.Second)
	for step := 0; ; step++ {
		if time.Now().After(deadline) {
			t.Fatalf("the rollout did not complete in 90s")
		}
		now := f.workload()
		if complete(now) && now.Status.ObservedGeneration == now.Generation && now.Status.UpdatedReplicas == 4 {
			break
		}
		var inFlight int64
		var all []sts
		for _, c := range f.clusters {
			_, s := f.statefulSet(c)
			all = append(all, s)
			if s.image != "db:2" {
				continue
			}
			if p, seen := lowest[c]; seen && s.partition > p {
				t.Fatalf("step %d: the partition of %s rose from %d to %d", step, c, p, s.partition)
			}
			lowest[c] = s.partition
			inFlight += max(0, s.replicas-s.partition-s.stUpdated) // allowed to update, not yet updated and available
		}
		if inFlight > 1 {
			t.Fatalf("step %d: %d units may be down at once, maxUnavailable 1: %+v", step, inFlight, all)
		}
		moved := false
		for i, c := range f.clusters {
			s := all[i]
			switch {
			case s.observed < s.generation:
				updated := s.stUpdated
				if f.statusImage[c] != s.image {
					updated = 0
				}
				f.setStatefulSetStatus(c, s.stReplicas, updated, s.stAvailable)
				moved = true
			case s.image == "db:2" && s.stUpdated < s.replicas-s.partition:
				// the StatefulSet controller replaces the next ordinal; it comes back ready
				f.setStatefulSetStatus(c, s.replicas, s.stUpdated+1, s.replicas)
				moved = true
			}
		}
		if !moved {
			before := fmt.Sprint(now.Status.Clusters)
			eventually(t, fwStepTimeout, "the hub's next round", func() (bool, string) {
				later := f.workload()
				changed := fmt.Sprint(later.Status.Clusters) != before || complete(later) != complete(now)
				for i, c := range f.clusters {
					if _, s := f.statefulSet(c); s.generation != all[i].generation {
						changed = true
					}
				}
				return changed, fmt.Sprintf("%v %s", later.Status.Clusters, progressing(later).Message)
			})
		}
	}
	var updated int64
	for _, c := range f.clusters {
		_, s := f.statefulSet(c)
		updated += s.replicas - s.partition
	}
	if updated != 4 {
		t.Errorf("%d units allowed on the new revision at the end, want exactly 6 − partition 2 = 4", updated)
	}
}

// New weights move units between the members within the global budgets, a
// unit at a time here (maxUnavailable 1, maxSurge 1): the member objects
// together never ask for more than replicas + maxSurge pods nor, played to
// the end, leave fewer than replicas − maxUnavailable, and neither object is
// recreated.
func TestFederatedWorkload_NewWeightsMoveUnitsWithinTheBudgets(t *testing.T) {
	f := newFedFleet(t, "fw-weights", false)
	a, b := f.clusters[0], f.clusters[1]
	f.relabel(a, "tier", "small")
	f.relabel(b, "tier", "big")
	f.createWorkload(10, intstr.FromInt32(1), intstr.FromInt32(1), nil)
	eventually(t, fwStepTimeout, "both member Deployments at 5", func() (bool, string) {
		da, db := readDep(f.deployment(a)), readDep(f.deployment(b))
		return da.replicas == 5 && db.replicas == 5, da.String() + "; " + db.String()
	})
	f.settle()
	f.ackUntil("the workload settled", complete)
	uids := map[string]string{a: string(f.deployment(a).GetUID()), b: string(f.deployment(b).GetUID())}

	f.update("weights 3:7", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.Division.Weights = []fleetv1alpha1.ClusterWeight{
			{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "small"}}, Weight: 3},
			{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "big"}}, Weight: 7},
		}
	})
	f.settleUntil("shares 3 and 7", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		da, db := readDep(f.deployment(a)), readDep(f.deployment(b))
		if total := da.replicas + db.replicas; total > 11 {
			t.Fatalf("the members ask for %d pods, more than 11: %s: %v; %s: %v", total, a, da, b, db)
		}
		// What a write the members have not played yet leaves available: a
		// shrink takes pods away at once, a growth adds none yet.
		if avl := min(da.stAvl, da.replicas) + min(db.stAvl, db.replicas); avl < 9 || da.stAvl+db.stAvl < 9 {
			t.Fatalf("the members' writes leave %d pods available, fewer than 9: %s: %v; %s: %v", avl, a, da, b, db)
		}
		return da.replicas == 3 && db.replicas == 7 && complete(fw)
	})
	for c, uid := range uids {
		if got := string(f.deployment(c).GetUID()); got != uid {
			t.Errorf("%s's Deployment was recreated (%s, was %s)", c, got, uid)
		}
	}
}
