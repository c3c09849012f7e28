package round

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	poll   = 2 * time.Second
	resync = 30 * time.Second
)

func deploymentTemplate(image string) runtime.RawExtension {
	raw, _ := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}},
			},
		},
	})
	return runtime.RawExtension{Raw: raw}
}

func workload(replicas int32) *fleetv1alpha1.FederatedWorkload {
	mu, ms := intstr.FromInt32(1), intstr.FromInt32(0)
	return &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{
			PlacementRef: fleetv1alpha1.PlacementReference{Name: "p"}, Replicas: replicas, Template: deploymentTemplate("web:1"),
			RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms},
		},
	}
}

func readyCluster(name string, ready metav1.ConditionStatus, since time.Time) fleetv1alpha1.MemberCluster {
	return fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
			Type: string(fleetv1alpha1.MemberClusterReady), Status: ready, LastTransitionTime: metav1.NewTime(since)}}}}
}

// fleetOf is an input placing fw on clusters, all Ready, bound through a set
// of every cluster; members as given.
func fleetOf(fw *fleetv1alpha1.FederatedWorkload, clusters []string, members map[string]Observed) Input {
	in := Input{Workload: fw, Placed: clusters, Members: members, Now: t0, RolloutPoll: poll, Resync: resync,
		Placement: &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: "p"}},
		Sets:      []fleetv1alpha1.MemberClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "all"}}},
		Bindings: []fleetv1alpha1.MemberClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: "all"},
			Spec: fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: "all"}}},
	}
	for _, c := range clusters {
		in.MemberClusters = append(in.MemberClusters, readyCluster(c, metav1.ConditionTrue, t0.Add(-time.Hour)))
	}
	return in
}

// settled is the member object a round built for fw in cluster with
// replicas, as a member that observed it and runs all of them available
// reports it.
func settled(t *testing.T, fw *fleetv1alpha1.FederatedWorkload, cluster string, replicas int32, uid string, grant fleetv1alpha1.MemberGrant) *unstructured.Unstructured {
	t.Helper()
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := member.Build(member.Object{Template: tmpl, Namespace: fw.Namespace, Name: fw.Name, Cluster: cluster, Replicas: replicas, Grant: alignGrant(grant)})
	if err != nil {
		t.Fatal(err)
	}
	obj.SetUID(types.UID(uid))
	obj.SetResourceVersion("7")
	obj.SetGeneration(3)
	obj.Object["status"] = map[string]any{"observedGeneration": int64(3), "replicas": int64(replicas), "updatedReplicas": int64(replicas),
		"availableReplicas": int64(replicas), "readyReplicas": int64(replicas)}
	return obj
}

// withSettledStatus is fw after a round that left every cluster at rest
// with its share.
func withSettledStatus(fw *fleetv1alpha1.FederatedWorkload, shares map[string]int32) *fleetv1alpha1.FederatedWorkload {
	tmpl, _ := member.ParseTemplate(fw.Spec.Template.Raw)
	fw = fw.DeepCopy()
	fw.Status.UpdateRevision = tmpl.Revision
	for _, name := range slices.Sorted(maps.Keys(shares)) {
		n := shares[name]
		fw.Status.Clusters = append(fw.Status.Clusters, fleetv1alpha1.FederatedClusterStatus{Name: name, DesiredReplicas: n,
			Replicas: n, UpdatedReplicas: n, AvailableReplicas: n, Grant: fleetv1alpha1.MemberGrant{Started: true, Paused: true, MaxUnavailable: 1}})
	}
	return fw
}

func progressing(st fleetv1alpha1.FederatedWorkloadStatus) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
}

// A round that cannot be planned says why in Progressing, writes nothing to
// any member, records no Event and looks again only when that can change.
func TestPlan_AStuckRoundWritesNothingAndSaysWhy(t *testing.T) {
	bad := workload(4)
	bad.Spec.Template.Raw = []byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{}}`)
	badDivision := workload(4)
	badDivision.Spec.Division.Weights = []fleetv1alpha1.ClusterWeight{{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}, Weight: 1}}
	many := make([]string, fleetv1alpha1.MaxFederatedClusters+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%04d", i)
	}
	noPlacement := fleetOf(workload(4), []string{"a"}, nil)
	noPlacement.Placement = nil
	cases := []struct {
		name    string
		in      Input
		reason  fleetv1alpha1.FederatedWorkloadReason
		requeue time.Duration
	}{
		{"a template of an unsupported kind", fleetOf(bad, []string{"a"}, nil), fleetv1alpha1.FederatedWorkloadReasonInvalidTemplate, 0},
		{"no Placement", noPlacement, fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound, resync},
		{"an empty placement", fleetOf(workload(4), nil, nil), fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced, resync},
		{"too many clusters", fleetOf(workload(4), many, nil), fleetv1alpha1.FederatedWorkloadReasonTooManyClusters, resync},
		{"weights that do not parse", fleetOf(badDivision, []string{"a"}, map[string]Observed{"a": {Read: true}}), fleetv1alpha1.FederatedWorkloadReasonInvalidDivision, resync},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Plan(c.in)
			p := progressing(out.Status)
			if out.Stuck != c.reason || p == nil || p.Status != metav1.ConditionFalse || p.Reason != string(c.reason) || p.Message == "" {
				t.Fatalf("stuck %q, Progressing %+v; want %s", out.Stuck, p, c.reason)
			}
			if len(out.Writes) != 0 || len(out.Events) != 0 || out.Requeue != c.requeue {
				t.Errorf("writes %v, events %v, requeue %s; want none, none, %s", out.Writes, out.Events, out.Requeue, c.requeue)
			}
			if out.Status.ObservedGeneration != 1 || !p.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("observedGeneration %d, condition at %s; want 1 at the round's clock %s", out.Status.ObservedGeneration, p.LastTransitionTime, t0)
			}
			if reads := ReadsOf(c.in); len(reads.Clusters) != 0 {
				t.Errorf("a stuck round reads members %v", reads.Clusters)
			}
		})
	}
}

// A new workload is created at its shares in every member that answered,
// with the hub's label and a plain create; a member that did not answer gets
// nothing and is charged as stale.
func TestPlan_ANewWorkloadIsCreatedWhereTheMembersAnswer(t *testing.T) {
	in := fleetOf(workload(10), []string{"a", "b", "c"}, map[string]Observed{"a": {Read: true}, "b": {Read: true}})
	out := Plan(in)
	if len(out.Writes) != 2 {
		t.Fatalf("writes %+v, want creates in a and b", out.Writes)
	}
	for i, want := range []struct {
		cluster  string
		replicas int64
	}{{"a", 4}, {"b", 3}} {
		w := out.Writes[i]
		replicas, _, _ := unstructured.NestedInt64(w.Object.Object, "spec", "replicas")
		if w.Cluster != want.cluster || w.Op != Create || replicas != want.replicas || w.Object.GetUID() != "" ||
			w.Object.GetLabels()[fleetv1alpha1.LabelFederatedWorkload] != "shop.web" || w.Object.GetNamespace() != "shop" {
			t.Errorf("write %d: %s %s of %d replicas, uid %q, labels %v; want a create of %d in %s",
				i, w.Op, w.Cluster, replicas, w.Object.GetUID(), w.Object.GetLabels(), want.replicas, want.cluster)
		}
	}
	if c := out.Status.Clusters[2]; c.Name != "c" || c.DesiredReplicas != 3 || c.Waiting != "status stale" {
		t.Errorf("the member that did not answer: %+v", c)
	}
	if len(out.Events) != 1 || out.Events[0].Reason != EventGranted || !strings.Contains(out.Events[0].Message, "a: started=true") {
		t.Errorf("events %+v, want one Granted naming the new grants", out.Events)
	}
	if out.Requeue != poll {
		t.Errorf("requeue %s, want %s while the members come up", out.Requeue, poll)
	}
	if reads := ReadsOf(in); !equality.Semantic.DeepEqual(reads.Clusters, []string{"a", "b", "c"}) || !reads.ReplicaSets ||
		reads.Key != (types.NamespacedName{Namespace: "shop", Name: "web"}) || reads.Kind.Kind != "Deployment" {
		t.Errorf("reads %+v", reads)
	}
}

// The workload's own object is applied to by its UID; a settled fleet is
// re-asserted every resync, with no Event and no change of status.
func TestPlan_ASettledFleetIsReassertedByUID(t *testing.T) {
	fw, in := settledFleet(t)
	first := Plan(in)
	in.Workload = fw.DeepCopy()
	in.Workload.Status = first.Status
	out := Plan(in)
	if len(out.Writes) != 2 || out.Writes[0].Op != Apply || out.Writes[0].Object.GetUID() != "uid-a" || out.Writes[1].Object.GetUID() != "uid-b" {
		t.Fatalf("writes %+v, want applies to uid-a and uid-b", out.Writes)
	}
	if len(out.Events) != 0 || out.Requeue != resync || !out.Plan.Done {
		t.Errorf("events %+v, requeue %s, done %v; want none, %s, done", out.Events, out.Requeue, out.Plan.Done, resync)
	}
	if !equality.Semantic.DeepEqual(out.Status, first.Status) {
		t.Errorf("a settled round changed the status:\n%+v\n%+v", first.Status, out.Status)
	}
	if p := progressing(out.Status); p.Reason != string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) {
		t.Errorf("Progressing %+v", p)
	}
	if again := Plan(in); !equality.Semantic.DeepEqual(again, out) {
		t.Error("the same input planned twice gave two outputs")
	}
}

// A member that already holds everything a round would write (the same
// fields, as last written, each with its value) is sent nothing: a settled
// fleet costs its members reads only. An edit in a member (a `kubectl
// scale`) is written back, to that member alone.
func TestPlan_AMemberThatHoldsItAllIsSentNothing(t *testing.T) {
	fw, in := settledFleet(t)
	first := Plan(in)
	if len(first.Writes) != 2 {
		t.Fatalf("writes %+v, want both members re-asserted (neither records what was written)", first.Writes)
	}
	// Each member takes its write; its apiserver defaults a field more.
	for _, w := range first.Writes {
		obs := in.Members[w.Cluster]
		held := obs.Object.DeepCopy()
		lbls, ann := held.GetLabels(), held.GetAnnotations()
		maps.Copy(lbls, w.Object.GetLabels())
		maps.Copy(ann, w.Object.GetAnnotations())
		held.SetLabels(lbls)
		held.SetAnnotations(ann)
		spec := w.Object.DeepCopy().Object["spec"].(map[string]any)
		spec["revisionHistoryLimit"] = int64(10)
		held.Object["spec"] = spec
		obs.Object = held
		in.Members[w.Cluster] = obs
	}
	in.Workload = fw.DeepCopy()
	in.Workload.Status = first.Status
	if out := Plan(in); len(out.Writes) != 0 {
		t.Fatalf("writes %+v to members that hold it all", out.Writes)
	}
	scaled := in.Members["a"]
	scaled.Object = scaled.Object.DeepCopy()
	if err := unstructured.SetNestedField(scaled.Object.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	in.Members["a"] = scaled
	out := Plan(in)
	if len(out.Writes) != 1 || out.Writes[0].Cluster != "a" || out.Writes[0].Op != Apply || out.Writes[0].Object.GetUID() != "uid-a" {
		t.Fatalf("writes %+v, want a's object applied back by its UID only", out.Writes)
	}
	if r, _, _ := unstructured.NestedInt64(out.Writes[0].Object.Object, "spec", "replicas"); r != 2 {
		t.Errorf("a is written back with %d replicas, want its share of 2", r)
	}
}

// An object under the workload's name that is not its own is never written;
// the conflict is recorded once as a Warning, and its clearing once as a
// Normal Event when the member answers without it.
func TestPlan_AConflictIsLeftAloneAndReportedOncePerChange(t *testing.T) {
	fw := workload(4)
	foreign := &unstructured.Unstructured{}
	foreign.SetAPIVersion("apps/v1")
	foreign.SetKind("Deployment")
	foreign.SetNamespace("shop")
	foreign.SetName("web")
	foreign.SetUID("someone-elses")
	in := fleetOf(fw, []string{"a", "b"}, map[string]Observed{"a": {Read: true, Object: foreign}, "b": {Read: true}})
	out := Plan(in)
	if len(out.Writes) != 1 || out.Writes[0].Cluster != "b" {
		t.Fatalf("writes %+v, want only b's create", out.Writes)
	}
	if p := progressing(out.Status); p.Reason != string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict) {
		t.Errorf("Progressing %+v", p)
	}
	var warned int
	for _, e := range out.Events {
		if e.Reason == string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict) && e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Message, "cluster a: Conflict: ") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("events %+v, want one conflict Warning for a", out.Events)
	}
	// the next round, the same conflict: no second Event
	in.Workload = fw.DeepCopy()
	in.Workload.Status = out.Status
	again := Plan(in)
	for _, e := range again.Events {
		if e.Reason == string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict) {
			t.Errorf("the same conflict recorded again: %+v", e)
		}
	}
	// the object is gone: cleared, once
	in.Workload.Status = again.Status
	in.Members["a"] = Observed{Read: true}
	cleared := Plan(in)
	if len(cleared.Events) == 0 || cleared.Events[0].Reason != EventMemberObjectConflictCleared || cleared.Events[0].Type != corev1.EventTypeNormal {
		t.Errorf("events %+v, want MemberObjectConflictCleared", cleared.Events)
	}
}

// A cluster that left the placement and whose units are gone has its object
// deleted, guarded by the UID and resourceVersion read; it stays in the
// status until a read finds the object gone.
func TestPlan_ALeaverIsDeletedByItsPreconditionsAndForgottenOnceGone(t *testing.T) {
	fw := withSettledStatus(workload(4), map[string]int32{"a": 4, "b": 0})
	fw.Status.Clusters[1].Replicas, fw.Status.Clusters[1].UpdatedReplicas, fw.Status.Clusters[1].AvailableReplicas = 0, 0, 0
	rest := fleetv1alpha1.MemberGrant{Started: true, Paused: true, MaxUnavailable: 1}
	b := settled(t, fw, "b", 0, "uid-b", rest)
	in := fleetOf(fw, []string{"a"}, map[string]Observed{
		"a": {Read: true, Object: settled(t, fw, "a", 4, "uid-a", rest)},
		"b": {Read: true, Object: b},
	})
	// b is Ready but no longer in a set bound to the namespace
	in.MemberClusters = append(in.MemberClusters, readyCluster("b", metav1.ConditionTrue, t0.Add(-time.Hour)))
	in.Sets[0].Spec.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	in.MemberClusters[1].Labels = map[string]string{"kubernetes.io/metadata.name": "b"}
	out := Plan(in)
	var del *Write
	for i := range out.Writes {
		if out.Writes[i].Cluster == "b" {
			del = &out.Writes[i]
		}
	}
	if del == nil || del.Op != Delete || del.UID != "uid-b" || del.ResourceVersion != "7" || del.Object.GetName() != "web" || del.Object.GetKind() != "Deployment" {
		t.Fatalf("writes %+v, want b's object deleted by uid-b at resourceVersion 7", out.Writes)
	}
	if len(out.Status.Clusters) != 2 || out.Requeue != poll {
		t.Errorf("clusters %+v, requeue %s: the leaver stays listed until its object is seen gone", out.Status.Clusters, out.Requeue)
	}
	in.Workload = fw.DeepCopy()
	in.Workload.Status = out.Status
	in.Members["b"] = Observed{Read: true}
	gone := Plan(in)
	if len(gone.Status.Clusters) != 1 || gone.Status.Clusters[0].Name != "a" {
		t.Errorf("clusters %+v, want b forgotten", gone.Status.Clusters)
	}
	for _, w := range gone.Writes {
		if w.Cluster == "b" {
			t.Errorf("b written after it was gone: %+v", w)
		}
	}
}

// The clock is an input: a member not Ready for longer than
// memberLostTimeoutSeconds by the round's clock is lost, a second earlier it
// is only stale.
func TestPlan_TheLostTimeoutRunsOnTheRoundsClock(t *testing.T) {
	fw := withSettledStatus(workload(4), map[string]int32{"a": 2, "b": 2})
	in := fleetOf(fw, []string{"a", "b"}, map[string]Observed{"a": {Read: true}})
	in.MemberClusters[1] = readyCluster("b", metav1.ConditionFalse, t0.Add(-fleetv1alpha1.DefaultMemberLostTimeoutSeconds*time.Second))
	for _, c := range []struct {
		now  time.Time
		want string
	}{{t0.Add(-time.Second), "status stale"}, {t0, "unreachable for longer than memberLostTimeoutSeconds"}} {
		in.Now = c.now
		out := Plan(in)
		if w := out.Status.Clusters[1].Waiting; !strings.HasPrefix(w, c.want) {
			t.Errorf("at %s: b waits %q, want %q", c.now, w, c.want)
		}
	}
}

// The round looks again at the member lost timeout, which no event
// announces: a second before it, the next round runs a second later, not at
// the poll or the resync.
func TestPlan_TheNextRoundComesAtTheLostTimeout(t *testing.T) {
	fw := withSettledStatus(workload(4), map[string]int32{"a": 2, "b": 2})
	in := fleetOf(fw, []string{"a", "b"}, map[string]Observed{"a": {Read: true}})
	in.Watched = true
	timeout := fleetv1alpha1.DefaultMemberLostTimeoutSeconds * time.Second
	in.MemberClusters[1] = readyCluster("b", metav1.ConditionFalse, t0.Add(-timeout+time.Second))
	if out := Plan(in); out.Requeue != time.Second {
		t.Errorf("requeue %s a second before b is lost, want 1s", out.Requeue)
	}
	in.Now = t0.Add(time.Second)
	if out := Plan(in); out.Requeue != resync {
		t.Errorf("requeue %s once b is lost (and watched), want the resync %s", out.Requeue, resync)
	}
}

// While something moves the members are polled, unless every member object
// is watched: its changes run the rounds, and the poll is a safety net at the
// resync.
func TestPlan_WatchedMembersArePolledAtTheResync(t *testing.T) {
	in := fleetOf(workload(10), []string{"a", "b"}, map[string]Observed{"a": {Read: true}, "b": {Read: true}})
	if out := Plan(in); out.Plan.Done || out.Requeue != poll {
		t.Fatalf("done %v, requeue %s; want a rollout under way, looked at again at the poll %s", out.Plan.Done, out.Requeue, poll)
	}
	in.Watched = true
	if out := Plan(in); out.Requeue != resync {
		t.Errorf("requeue %s with every member object watched, want the resync %s", out.Requeue, resync)
	}
}

// The last round of a workload being deleted deletes its own objects by
// their preconditions, keeps objects of others and names members it could
// not reach.
func TestFinalize_DeletesOnlyTheWorkloadsOwnObjects(t *testing.T) {
	fw := withSettledStatus(workload(6), map[string]int32{"a": 2, "b": 2, "c": 2, "d": 0})
	own := settled(t, fw, "a", 2, "uid-a", fleetv1alpha1.MemberGrant{})
	foreign := own.DeepCopy()
	foreign.SetLabels(nil)
	writes, evs := Finalize(fw, map[string]Observed{"a": {Read: true, Object: own}, "b": {Read: true, Object: foreign}, "d": {Read: true}})
	if len(writes) != 1 || writes[0].Cluster != "a" || writes[0].Op != Delete || writes[0].UID != "uid-a" || writes[0].ResourceVersion != "7" {
		t.Fatalf("writes %+v, want a's object deleted by its preconditions", writes)
	}
	if len(evs) != 2 || evs[0].Reason != EventMemberObjectsLeft || !strings.Contains(evs[0].Message, "no connection to c") ||
		evs[1].Reason != EventForeignMemberObjectsKept || !strings.Contains(evs[1].Message, "in b is not this workload's") {
		t.Errorf("events %+v", evs)
	}
	if r := FinalizeReads(fw); len(r.Clusters) != 4 || r.ReplicaSets {
		t.Errorf("reads %+v, want every cluster of the status", r)
	}
}
