package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
)

// The hub writes and deletes only the member objects labelled as its
// workload's. These tests put an object of someone else under the
// workload's name in member a, before the hub reads it or between its read
// and its write, and check that the object is never changed or deleted,
// that the conflict is reported, and that member b is served as usual.

// foreignDeployment makes, in cluster c, a Deployment under the workload's
// name that the hub did not make, with labels lbls: 7 pods of its own, all
// available (were the hub to count them, the workload's sums would show it).
func (f *fedFleet) foreignDeployment(c string, lbls map[string]string) *unstructured.Unstructured {
	f.t.Helper()
	ctx := context.Background()
	cl := f.envs[c].Client
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatalf("creating namespace %s in %s: %v", f.ns, c, err)
	}
	u := foreignObject(f.ns, lbls)
	if err := cl.Create(ctx, u, client.FieldOwner("someone-else")); err != nil {
		f.t.Fatalf("creating the foreign Deployment in %s: %v", c, err)
	}
	u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "replicas": int64(7), "updatedReplicas": int64(7),
		"availableReplicas": int64(7), "readyReplicas": int64(7)}
	if err := cl.Status().Update(ctx, u); err != nil {
		f.t.Fatalf("writing the foreign Deployment's status in %s: %v", c, err)
	}
	return f.deployment(c)
}

// foreignObject is a Deployment under the workload's name as someone might
// have made it by hand: the workload's selector and pod labels (so nothing
// but the hub's checks would stop it from being taken over), 7 replicas and
// an image of its own.
func foreignObject(ns string, lbls map[string]string) *unstructured.Unstructured {
	l := map[string]any{"app": fwName}
	for k, v := range lbls {
		l[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": fwName, "labels": l},
		"spec": map[string]any{
			"replicas": int64(7),
			"selector": map[string]any{"matchLabels": map[string]any{"app": fwName}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": fwName}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "someone-else:1"}}},
			},
		},
	}}
}

// assertUntouched fails the test unless the Deployment in cluster c is
// before, unchanged: same object, same resourceVersion, labels and spec, and
// no field of the hub's unless it had some.
func (f *fedFleet) assertUntouched(c string, before *unstructured.Unstructured) {
	f.t.Helper()
	now := f.deployment(c)
	switch {
	case now == nil:
		f.t.Fatalf("the foreign Deployment in %s was deleted", c)
	case now.GetUID() != before.GetUID():
		f.t.Fatalf("the foreign Deployment in %s was replaced (uid %s, was %s)", c, now.GetUID(), before.GetUID())
	case !now.GetDeletionTimestamp().IsZero():
		f.t.Fatalf("the foreign Deployment in %s is being deleted", c)
	}
	if !maps.Equal(now.GetLabels(), before.GetLabels()) {
		f.t.Errorf("the foreign Deployment's labels in %s changed: %v, were %v", c, now.GetLabels(), before.GetLabels())
	}
	if !equality.Semantic.DeepEqual(now.Object["spec"], before.Object["spec"]) {
		f.t.Errorf("the foreign Deployment's spec in %s changed: %v, was %v", c, now.Object["spec"], before.Object["spec"])
	}
	if hubFields(now) != hubFields(before) {
		f.t.Errorf("the hub owns fields of the foreign Deployment in %s: %+v", c, now.GetManagedFields())
	}
	if now.GetResourceVersion() != before.GetResourceVersion() {
		f.t.Errorf("the foreign Deployment in %s was written: resourceVersion %s, was %s", c, now.GetResourceVersion(), before.GetResourceVersion())
	}
}

// hubFields counts the hub's entries in u's managed fields.
func hubFields(u *unstructured.Unstructured) int {
	n := 0
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == federatedworkload.FieldManager {
			n++
		}
	}
	return n
}

// Two MemberClusters whose kubeconfigs name the same cluster (one cluster
// registered twice) must not share the workload's object there: each would
// write its own share into it, and the budget would count its pods twice.
// The first to create the object holds it; the other's is a conflict, named
// in its status, and nothing is written for it.
func TestFederatedWorkload_TwoMemberClustersNamingOneClusterDoNotShareItsObject(t *testing.T) {
	f := newFedFleetOn(t, "fw-twice", false, memberEnv, memberEnv)
	f.createWorkload(4, intstr.FromInt32(1), intstr.FromInt32(0), nil)
	var holder string
	eventually(t, fwStepTimeout, "the Deployment labelled for one of the MemberClusters", func() (bool, string) {
		d := f.deployment(f.clusters[0])
		if d == nil {
			return false, "no Deployment yet"
		}
		holder = d.GetLabels()[fleetv1alpha1.LabelMemberCluster]
		return holder != "", fmt.Sprintf("labels %v", d.GetLabels())
	})
	other := f.clusters[0]
	if holder == other {
		other = f.clusters[1]
	}
	f.waitForConflict(other, f.conflictMessage(fmt.Sprintf("label %s is %q, not %q: another MemberCluster names the same cluster",
		fleetv1alpha1.LabelMemberCluster, holder, other)), holder)
	if got := f.deployment(holder).GetLabels()[fleetv1alpha1.LabelMemberCluster]; got != holder {
		t.Errorf("the Deployment was taken over: labelled for %q, want %q", got, holder)
	}
}

// conflictMessage is the waiting of a member whose object is not the
// workload's; why is the part in parentheses.
func (f *fedFleet) conflictMessage(why string) string {
	return fmt.Sprintf("Conflict: Deployment %s/%s exists in the member and is not managed by this FederatedWorkload (%s)", f.ns, fwName, why)
}

func (f *fedFleet) labelMissing() string {
	return fmt.Sprintf("label %s=%s.%s is missing", fleetv1alpha1.LabelFederatedWorkload, f.ns, fwName)
}

// waitForConflict waits for cluster c's conflict in the status and the
// Progressing reason, and for the other cluster's Deployment at its share of
// 2 (the tests' workloads are 4 pods over two clusters).
func (f *fedFleet) waitForConflict(c, want, other string) {
	const share = 2
	f.t.Helper()
	fw := f.waitForCondition("the conflict in "+c+" reported", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		e := clusterStatus(fw, c)
		return e != nil && strings.HasPrefix(e.Waiting, "Conflict:") &&
			progressing(fw).Reason == string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict) && readDep(f.deployment(other)).replicas == share
	})
	e := clusterStatus(fw, c)
	if e.Waiting != want {
		f.t.Errorf("waiting of %s:\n got %q\nwant %q", c, e.Waiting, want)
	}
	if e.Replicas != 0 || e.UpdatedReplicas != 0 || e.AvailableReplicas != 0 {
		f.t.Errorf("the foreign object's pods counted as the workload's in %s: %+v", c, e)
	}
	if p := progressing(fw); p.Status != metav1.ConditionFalse || !strings.Contains(p.Message, "member object conflict in cluster "+c+":") {
		f.t.Errorf("Progressing %s %s: %s", p.Status, p.Reason, p.Message)
	}
}

// events are the workload's Events of reason on the hub.
func (f *fedFleet) events(reason string) []eventsv1.Event {
	f.t.Helper()
	var list eventsv1.EventList
	if err := hubEnv.Client.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "FederatedWorkload" && e.Regarding.Name == fwName && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// printed is the workload's row of `kubectl get federatedworkloads` as the
// hub serves it (a Table), by column name, and the columns kubectl shows
// without -o wide.
func (f *fedFleet) printed() (cells map[string]string, byDefault map[string]bool) {
	f.t.Helper()
	cs, err := kubernetes.NewForConfig(hubEnv.Config)
	if err != nil {
		f.t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis/fleet.lockstep.dev/v1alpha1/namespaces", f.ns, "federatedworkloads").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		f.t.Fatalf("getting the table of FederatedWorkloads: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		f.t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		f.t.Fatalf("%d rows: %s", len(table.Rows), raw)
	}
	cells, byDefault = map[string]string{}, map[string]bool{}
	for i, col := range table.ColumnDefinitions {
		cells[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		byDefault[col.Name] = col.Priority == 0
	}
	return cells, byDefault
}

// A Deployment someone made under the workload's name in a, without the
// hub's label: the hub neither writes nor deletes it and counts none of its
// pods; status, condition, an Event and `kubectl get` say so. b gets its
// object and rolls within the budget a's missing share leaves. Deleting the
// workload deletes b's object and leaves a's.
func TestFederatedWorkload_ForeignObjectIsLeftAloneAndReported(t *testing.T) {
	f := newFedFleet(t, "fw-foreign", false)
	a, b := f.clusters[0], f.clusters[1]
	foreign := f.foreignDeployment(a, map[string]string{"team": "other"})
	// 4 pods over a and b, 2 each; of maxUnavailable 3, a's missing 2 take 2.
	f.createWorkload(4, intstr.FromInt32(3), intstr.FromInt32(0), nil)
	f.waitForConflict(a, f.conflictMessage(f.labelMissing()), b)
	f.assertUntouched(a, foreign)

	// b's pods count, a's foreign 7 do not.
	f.setStatus(b, 2, 2, 2)
	f.waitForCondition("the workload counting b's 2 pods only", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		e := clusterStatus(fw, b)
		return e != nil && e.AvailableReplicas == 2 && fw.Status.AvailableReplicas == 2 && fw.Status.Replicas == 2
	})

	// A rollout: b starts with what is left of maxUnavailable 3 once a's
	// share of 2 counts as unavailable: 1.
	f.startRollout()
	eventually(t, fwStepTimeout, b+" started", func() (bool, string) {
		f.ack() // b's controller observing its spec (a's object has observed its own)
		d := readDep(f.deployment(b))
		return d.image == newImage && !d.paused, d.String()
	})
	if d := readDep(f.deployment(b)); d.mu != 1 || d.ms != 0 {
		t.Errorf("%s started with maxUnavailable %d, maxSurge %d; a's missing share leaves 1 and 0", b, d.mu, d.ms)
	}
	f.setStatus(b, 2, 1, 1)
	f.setStatus(b, 2, 2, 2)
	f.waitForCondition(b+"'s rollout done", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		e := clusterStatus(fw, b)
		return fw.Status.ObservedGeneration == fw.Generation && e != nil && e.UpdatedReplicas == 2 && e.AvailableReplicas == 2
	})
	f.assertUntouched(a, foreign)

	// Reported once: many rounds have run since the conflict was found.
	if evs := f.events(string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict)); len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning ||
		evs[0].Series != nil || !strings.Contains(evs[0].Note, "cluster "+a+": Conflict: Deployment") {
		t.Errorf("want one Warning Event %s naming %s, recorded once: %+v", string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict), a, evs)
	}
	cells, byDefault := f.printed()
	if cells["Progressing"] != string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict) || !byDefault["Progressing"] {
		t.Errorf("kubectl get shows Progressing %q (a default column: %t)", cells["Progressing"], byDefault["Progressing"])
	}
	if !strings.Contains(cells["Waiting"], "member object conflict in cluster "+a) {
		t.Errorf("kubectl get -o wide shows Waiting %q", cells["Waiting"])
	}

	// Deleting the workload deletes b's object only, and lets the workload go.
	ctx := context.Background()
	if err := hubEnv.Client.Delete(ctx, f.workload()); err != nil {
		t.Fatal(err)
	}
	eventually(t, fwStepTimeout, "the workload gone and "+b+"'s Deployment deleted", func() (bool, string) {
		err := hubEnv.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fwName}, &fleetv1alpha1.FederatedWorkload{})
		return apierrors.IsNotFound(err) && f.deployment(b) == nil, fmt.Sprintf("workload: %v; %s: %v", err, b, readDep(f.deployment(b)))
	})
	f.assertUntouched(a, foreign)
}

// An object labelled for another workload is a conflict as well, and a
// cluster that leaves the placement leaves such an object where it is.
func TestFederatedWorkload_ObjectOfAnotherWorkloadIsAConflictAndStaysWhenTheClusterLeaves(t *testing.T) {
	f := newFedFleet(t, "fw-other", false)
	a, b := f.clusters[0], f.clusters[1]
	otherOwner := f.ns + ".api"
	foreign := f.foreignDeployment(a, map[string]string{fleetv1alpha1.LabelFederatedWorkload: otherOwner})
	f.createWorkload(4, intstr.FromInt32(1), intstr.FromInt32(1), nil)
	f.waitForConflict(a, f.conflictMessage(fmt.Sprintf("label %s is %q, not %q", fleetv1alpha1.LabelFederatedWorkload, otherOwner, f.ns+"."+fwName)), b)
	f.assertUntouched(a, foreign)
	f.setStatus(b, 2, 2, 2)

	// a leaves: b grows into the whole workload, a leaves the status, and
	// a's object is not the workload's to delete.
	f.relabel(a, "fw-test", "elsewhere")
	f.writeDecision(1, b)
	f.ackUntil(a+" gone from the status and "+b+" grown to 4", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return clusterStatus(fw, a) == nil && readDep(f.deployment(b)).replicas == 4
	})
	f.assertUntouched(a, foreign)
}

// Once the conflicting object is deleted the hub creates the workload's own,
// and the conflict clears.
func TestFederatedWorkload_ConflictClearsOnceTheObjectIsGone(t *testing.T) {
	f := newFedFleet(t, "fw-clear", false)
	a, b := f.clusters[0], f.clusters[1]
	foreign := f.foreignDeployment(a, nil)
	f.createWorkload(4, intstr.FromInt32(1), intstr.FromInt32(0), nil)
	f.waitForConflict(a, f.conflictMessage(f.labelMissing()), b)

	if err := f.envs[a].Client.Delete(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	eventually(t, fwStepTimeout, "the workload's own Deployment in "+a, func() (bool, string) {
		u := f.deployment(a)
		return u != nil && u.GetUID() != foreign.GetUID() && u.GetLabels()[fleetv1alpha1.LabelFederatedWorkload] == f.ns+"."+fwName &&
			readDep(u).replicas == 2, readDep(u).String()
	})
	f.settle()
	fw := f.ackUntil("the workload settled", complete)
	if e := clusterStatus(fw, a); e == nil || e.Waiting != "" || e.AvailableReplicas != 2 {
		t.Errorf("%s after the conflict: %+v", a, e)
	}
	eventually(t, fwStepTimeout, "an Event saying the conflict cleared", func() (bool, string) {
		evs := f.events("MemberObjectConflictCleared")
		return len(evs) == 1 && evs[0].Type == corev1.EventTypeNormal, fmt.Sprintf("%+v", evs)
	})
}

// The hub's guard on its applies is the apiserver's: an apply that names a
// UID does not create an object, and does not change another object under
// the same name. Checked here against the real apiserver, as the hub relies
// on it.
func TestMemberApply_AUIDInTheApplyIsAPrecondition(t *testing.T) {
	ctx := context.Background()
	cl := memberEnv.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "uid-apply-"}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	apply := func(uid types.UID, replicas int64) error {
		u := foreignObject(ns.Name, map[string]string{fleetv1alpha1.LabelFederatedWorkload: ns.Name + "." + fwName})
		_ = unstructured.SetNestedField(u.Object, replicas, "spec", "replicas")
		u.SetUID(uid)
		return cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(federatedworkload.FieldManager), client.ForceOwnership)
	}
	get := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: fwName}, u); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			t.Fatal(err)
		}
		return u
	}

	// No object: the apply fails and creates none.
	err := apply("5a1c0e2e-0000-4000-8000-000000000001", 1)
	t.Logf("apply with a UID, no object: %v", err)
	if !apierrors.IsConflict(err) || get() != nil {
		t.Fatalf("an apply with a UID and no object: %v (want a Conflict), object %v", err, get())
	}

	// The object of that UID: the apply changes it.
	first := foreignObject(ns.Name, map[string]string{fleetv1alpha1.LabelFederatedWorkload: ns.Name + "." + fwName})
	if err := cl.Create(ctx, first, client.FieldOwner(federatedworkload.FieldManager)); err != nil {
		t.Fatal(err)
	}
	if err := apply(first.GetUID(), 2); err != nil {
		t.Fatalf("an apply with the object's UID: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(get().Object, "spec", "replicas"); r != 2 {
		t.Fatalf("the apply with the object's UID did not write: replicas %d", r)
	}

	// Another object under the name: the apply fails and changes nothing.
	if err := cl.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := foreignObject(ns.Name, nil)
	if err := cl.Create(ctx, second, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	err = apply(first.GetUID(), 3)
	t.Logf("apply with the UID of a deleted object, another object under the name: %v", err)
	if err == nil {
		t.Fatal("an apply with another object's UID succeeded")
	}
	if now := get(); now.GetResourceVersion() != second.GetResourceVersion() {
		t.Fatalf("the failed apply wrote the object: resourceVersion %s, was %s", now.GetResourceVersion(), second.GetResourceVersion())
	}
}

// hookedMembers hands the FederatedWorkload controller member connections
// whose reads of one cluster run hook after the read, before the controller
// acts on what it read: where another writer would race it.
type hookedMembers struct {
	members.Clusters
	cluster string
	hook    func(obj client.Object, err error)
}

func (h hookedMembers) Get(name string, kind schema.GroupVersionKind) (cluster.Cluster, bool) {
	c, ok := h.Clusters.Get(name, kind)
	if !ok || name != h.cluster {
		return c, ok
	}
	return hookedCluster{Cluster: c, hook: h.hook}, true
}

type hookedCluster struct {
	cluster.Cluster
	hook func(client.Object, error)
}

func (c hookedCluster) GetAPIReader() client.Reader {
	return hookedReader{Reader: c.Cluster.GetAPIReader(), hook: c.hook}
}

type hookedReader struct {
	client.Reader
	hook func(client.Object, error)
}

func (r hookedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	r.hook(obj, err)
	return err
}

// race is a write by someone else that the next hub started meets between
// its read of a member's Deployment and what it does next.
type race struct {
	f       *fedFleet
	cluster string
	reads   atomic.Int32
	once    sync.Once
	done    chan struct{}
	made    *unstructured.Unstructured
}

// raceOnce runs act, once, on the first read by the next hub started of
// cluster c's Deployment that when says is the one, with a copy of what was
// read.
func (f *fedFleet) raceOnce(c string, when func(obj client.Object, err error) bool,
	act func(read *unstructured.Unstructured) *unstructured.Unstructured) *race {
	r := &race{f: f, cluster: c, done: make(chan struct{})}
	f.wrapMembers = func(inner members.Clusters) members.Clusters {
		return hookedMembers{Clusters: inner, cluster: c, hook: func(obj client.Object, err error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || u.GetKind() != "Deployment" {
				return
			}
			r.reads.Add(1)
			if !when(obj, err) {
				return
			}
			r.once.Do(func() {
				r.made = act(u.DeepCopy())
				close(r.done)
			})
		}}
	}
	return r
}

// connected waits until the hub has read the member's Deployment: it holds
// a connection to the member (a MemberCluster's Ready condition, written by
// an earlier hub, does not say so).
func (r *race) connected() {
	r.f.t.Helper()
	eventually(r.f.t, fwStepTimeout, "the hub reading "+r.cluster, func() (bool, string) {
		return r.reads.Load() > 0, "no read yet"
	})
}

// played waits until act has run and gives what it returned.
func (r *race) played() *unstructured.Unstructured {
	r.f.t.Helper()
	eventually(r.f.t, fwStepTimeout, "the race played in "+r.cluster, func() (bool, string) {
		select {
		case <-r.done:
			return true, ""
		default:
			return false, fmt.Sprintf("%d reads, none the one", r.reads.Load())
		}
	})
	return r.made
}

// makeForeign creates the foreign Deployment in c from inside the hub's
// round (no t.Fatal off the test's goroutine).
func (f *fedFleet) makeForeign(c string, lbls map[string]string) *unstructured.Unstructured {
	u := foreignObject(f.ns, lbls)
	if err := f.envs[c].Client.Create(context.Background(), u, client.FieldOwner("someone-else")); err != nil {
		f.t.Errorf("creating the foreign Deployment in %s: %v", c, err)
		return nil
	}
	return u
}

// A Deployment made in a after the hub read that there is none: the hub's
// create fails and the object is left alone, reported as a conflict.
func TestFederatedWorkload_ObjectMadeAfterTheReadIsNotTakenOver(t *testing.T) {
	f := newFedFleet(t, "fw-race-create", false)
	a, b := f.clusters[0], f.clusters[1]
	if err := memberEnv.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	made := f.raceOnce(a, func(_ client.Object, err error) bool { return apierrors.IsNotFound(err) },
		func(*unstructured.Unstructured) *unstructured.Unstructured { return f.makeForeign(a, nil) })
	f.stopHub()
	f.startHub()
	f.createWorkload(4, intstr.FromInt32(1), intstr.FromInt32(0), nil)
	foreign := made.played()
	f.waitForConflict(a, f.conflictMessage(f.labelMissing()), b)
	f.assertUntouched(a, foreign)
}

// The workload's own Deployment in a replaced by someone else's between the
// hub's read and its apply: the apply, made for the object read, does not
// reach the new one.
func TestFederatedWorkload_ObjectReplacedAfterTheReadIsNotTakenOver(t *testing.T) {
	f := newFedFleet(t, "fw-race-apply", false)
	a, b := f.clusters[0], f.clusters[1]
	f.createSettledWorkload(4, intstr.FromInt32(1), intstr.FromInt32(0))
	ours := f.deployment(a)
	made := f.raceOnce(a, func(obj client.Object, err error) bool {
		return err == nil && obj.GetUID() == ours.GetUID()
	}, func(read *unstructured.Unstructured) *unstructured.Unstructured {
		if err := f.envs[a].Client.Delete(context.Background(), read); err != nil {
			f.t.Errorf("deleting the workload's Deployment in %s: %v", a, err)
			return nil
		}
		return f.makeForeign(a, nil)
	})
	f.stopHub()
	f.startHub()
	foreign := made.played()
	f.waitForConflict(a, f.conflictMessage(f.labelMissing()), b)
	f.assertUntouched(a, foreign)
}

// The workload being deleted, its own Deployment in a relabelled by someone
// between the hub's read and its delete: the delete, made for the object as
// read, does not reach it, and the workload goes without it.
func TestFederatedWorkload_ObjectRelabelledBeforeTheDeleteIsNotDeleted(t *testing.T) {
	f := newFedFleet(t, "fw-race-delete", false)
	a, b := f.clusters[0], f.clusters[1]
	f.createSettledWorkload(4, intstr.FromInt32(1), intstr.FromInt32(0))
	ctx := context.Background()
	deleting := func() bool {
		var fw fleetv1alpha1.FederatedWorkload
		err := hubEnv.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fwName}, &fw)
		return err == nil && !fw.DeletionTimestamp.IsZero()
	}
	made := f.raceOnce(a, func(obj client.Object, err error) bool {
		return err == nil && obj.GetLabels()[fleetv1alpha1.LabelFederatedWorkload] != "" && deleting()
	}, func(u *unstructured.Unstructured) *unstructured.Unstructured {
		lbls := u.GetLabels()
		delete(lbls, fleetv1alpha1.LabelFederatedWorkload)
		u.SetLabels(lbls)
		if err := f.envs[a].Client.Update(ctx, u, client.FieldOwner("someone-else")); err != nil {
			f.t.Errorf("relabelling the Deployment in %s: %v", a, err)
			return nil
		}
		return u
	})
	f.stopHub()
	f.startHub()
	made.connected()
	if err := hubEnv.Client.Delete(ctx, f.workload()); err != nil {
		t.Fatal(err)
	}
	relabelled := made.played()
	eventually(t, fwStepTimeout, "the workload gone and "+b+"'s Deployment deleted", func() (bool, string) {
		err := hubEnv.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fwName}, &fleetv1alpha1.FederatedWorkload{})
		return apierrors.IsNotFound(err) && f.deployment(b) == nil, fmt.Sprintf("workload: %v; %s: %v", err, b, readDep(f.deployment(b)))
	})
	f.assertUntouched(a, relabelled)
}
