package gang

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// These tests run the native backend against a real kube-apiserver (envtest).
// There is no scheduler and no kube-controller-manager: where the tests need
// what those do (bind pods, set conditions, release a PodGroup's finalizer),
// they do it themselves, through the API, as those components would.

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gang-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// newPodCliqueSet creates a PodCliqueSet to own gangs.
func newPodCliqueSet(t *testing.T, ns, name string) *v1alpha1.PodCliqueSet {
	t.Helper()
	pcs := &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodCliqueSetSpec{Template: v1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []v1alpha1.PodCliqueTemplateSpec{{
				Name: "worker", Replicas: 3,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "worker:v1"}}}},
			}},
		}},
	}
	if err := env.Client.Create(t.Context(), pcs); err != nil {
		t.Fatalf("creating PodCliqueSet: %v", err)
	}
	return pcs
}

func native() *Native { return NewNative(Options{Client: env.Client}) }

func getPodGroup(t *testing.T, ns, name string) *schedulingv1alpha2.PodGroup {
	t.Helper()
	pg := &schedulingv1alpha2.PodGroup{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		t.Fatalf("reading PodGroup %s: %v", name, err)
	}
	return pg
}

func syncGangs(t *testing.T, b Backend, owner client.Object, gangs ...Gang) {
	t.Helper()
	if err := b.SyncGangs(t.Context(), owner, gangs); err != nil {
		t.Fatalf("SyncGangs: %v", err)
	}
}

// newMember creates a pod of PodCliqueSet llm that joined its gang llm-0
// through b.
func newMember(t *testing.T, b Backend, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelPodCliqueSet: "llm"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "worker:v1"}}},
	}
	if b.PlacesGangs() {
		JoinPod(pod, &v1alpha1.PodCliqueGang{PodGroupName: "llm-0"})
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
}

// releaseFinalizers does what kube-controller-manager's PodGroup protection
// does once no pod uses a PodGroup being deleted: it lets it go.
func releaseFinalizers(t *testing.T, pg *schedulingv1alpha2.PodGroup) {
	t.Helper()
	pg.Finalizers = nil
	if err := env.Client.Update(t.Context(), pg); err != nil {
		t.Fatalf("removing the finalizers of PodGroup %s: %v", pg.Name, err)
	}
}

func baseGang(name string, minCount int32) Gang {
	return Gang{Name: name, MinCount: minCount, Labels: map[string]string{
		v1alpha1.LabelPodCliqueSet: "llm", v1alpha1.LabelPodCliqueSetReplicaIndex: "0",
	}}
}

func TestNativeSyncGangs_CreatesAPodGroupPerGangWithMinCountLabelsAndOwner(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	syncGangs(t, native(), pcs, baseGang("llm-0", 7), baseGang("llm-1", 7))

	for _, name := range []string{"llm-0", "llm-1"} {
		pg := getPodGroup(t, ns, name)
		if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 7 {
			t.Errorf("PodGroup %s policy %+v, want gang minCount 7", name, pg.Spec.SchedulingPolicy)
		}
		if pg.Spec.PodGroupTemplateRef != nil {
			t.Errorf("PodGroup %s refers to a Workload template: %+v", name, pg.Spec.PodGroupTemplateRef)
		}
		wantLabels := map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, v1alpha1.LabelPodCliqueSet: "llm", v1alpha1.LabelPodCliqueSetReplicaIndex: "0",
		}
		if !maps.Equal(pg.Labels, wantLabels) {
			t.Errorf("PodGroup %s labels %v, want %v", name, pg.Labels, wantLabels)
		}
		ref := metav1.GetControllerOf(pg)
		if ref == nil || ref.UID != pcs.UID || ref.Kind != "PodCliqueSet" || ref.APIVersion != v1alpha1.GroupVersion.String() ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("PodGroup %s controller %+v, want PodCliqueSet %s (%s) blocking owner deletion", name, ref, pcs.Name, pcs.UID)
		}
	}
}

func TestNativeSyncGangs_SecondCallWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	b := native()
	gangs := []Gang{baseGang("llm-0", 3), baseGang("llm-1", 3)}
	syncGangs(t, b, pcs, gangs...)
	before := map[string]string{}
	for _, g := range gangs {
		before[g.Name] = getPodGroup(t, ns, g.Name).ResourceVersion
	}

	syncGangs(t, b, pcs, gangs...)
	for _, g := range gangs {
		if rv := getPodGroup(t, ns, g.Name).ResourceVersion; rv != before[g.Name] {
			t.Errorf("PodGroup %s: resourceVersion %s after a second sync, was %s", g.Name, rv, before[g.Name])
		}
	}
}

func TestNativeSyncGangs_NewLabelsArePatchedOntoTheSamePodGroup(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	b := native()
	g := baseGang("llm-0", 3)
	syncGangs(t, b, pcs, g)
	uid := getPodGroup(t, ns, "llm-0").UID

	g.Labels = maps.Clone(g.Labels)
	g.Labels["team"] = "inference"
	syncGangs(t, b, pcs, g)
	pg := getPodGroup(t, ns, "llm-0")
	if pg.UID != uid || pg.Labels["team"] != "inference" {
		t.Errorf("PodGroup uid %s (was %s), labels %v: want the same object with team=inference", pg.UID, uid, pg.Labels)
	}
}

// The gang policy of a PodGroup cannot change. A new minCount replaces the
// PodGroup, but only once no pod uses it; until then the old one stays and
// GangStatus reports the minimum in force.
func TestNativeSyncGangs_NewMinCountWaitsUntilNoPodUsesTheGang(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	b := native()
	key := client.ObjectKey{Namespace: ns, Name: "llm-0"}

	syncGangs(t, b, pcs, baseGang("llm-0", 3))
	old := getPodGroup(t, ns, "llm-0")
	pod := newMember(t, b, ns, "llm-0-worker-0")
	finished := newMember(t, b, ns, "llm-0-worker-1")
	finished.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(ctx, finished); err != nil {
		t.Fatal(err)
	}

	// A pod that has not finished uses the gang: it stays as it is.
	syncGangs(t, b, pcs, baseGang("llm-0", 2))
	if pg := getPodGroup(t, ns, "llm-0"); pg.UID != old.UID || pg.DeletionTimestamp != nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 3 {
		t.Fatalf("with a pod using it, PodGroup uid %s (was %s), deleting %v, minCount %d: want it untouched",
			pg.UID, old.UID, pg.DeletionTimestamp != nil, pg.Spec.SchedulingPolicy.Gang.MinCount)
	}
	if s, err := b.GangStatus(ctx, key); err != nil || !s.Exists || s.MinCount != 3 {
		t.Fatalf("GangStatus = %+v, %v: want it existing with minCount 3 in force", s, err)
	}

	// Once only finished pods are left, it is deleted...
	if err := env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	syncGangs(t, b, pcs, baseGang("llm-0", 2))
	pg := getPodGroup(t, ns, "llm-0")
	if pg.UID != old.UID || pg.DeletionTimestamp == nil {
		t.Fatalf("with no pod using it, PodGroup uid %s (was %s) deleting %v: want the old one being deleted", pg.UID, old.UID, pg.DeletionTimestamp != nil)
	}
	// ...and while it goes, pods must not join it.
	if s, err := b.GangStatus(ctx, key); err != nil || s.Exists || s.Reason != ReasonGangDeleting {
		t.Fatalf("GangStatus = %+v, %v: want Exists=false, reason %s", s, err, ReasonGangDeleting)
	}
	syncGangs(t, b, pcs, baseGang("llm-0", 2)) // nothing to do while it goes

	// ...and made anew once it is gone.
	releaseFinalizers(t, pg)
	syncGangs(t, b, pcs, baseGang("llm-0", 2))
	pg = getPodGroup(t, ns, "llm-0")
	if pg.UID == old.UID || pg.Spec.SchedulingPolicy.Gang.MinCount != 2 {
		t.Errorf("PodGroup uid %s minCount %d, want a new one (not %s) with minCount 2", pg.UID, pg.Spec.SchedulingPolicy.Gang.MinCount, old.UID)
	}
}

func TestNativeSyncGangs_DeletesOnlyItsOwnGangsThatAreNoLongerListed(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	other := newPodCliqueSet(t, ns, "chat")
	b := native()
	syncGangs(t, b, pcs, baseGang("llm-0", 3), baseGang("llm-1", 3))
	syncGangs(t, b, other, baseGang("chat-0", 3))

	syncGangs(t, b, pcs, baseGang("llm-0", 3)) // scaled in: llm-1 goes
	gone := &schedulingv1alpha2.PodGroup{}
	switch err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "llm-1"}, gone); {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case gone.DeletionTimestamp == nil:
		t.Errorf("PodGroup llm-1 is still there and not being deleted")
	}
	for _, name := range []string{"llm-0", "chat-0"} {
		if pg := getPodGroup(t, ns, name); pg.DeletionTimestamp != nil {
			t.Errorf("PodGroup %s is being deleted, want it kept", name)
		}
	}
}

func TestNativeSyncGangs_RefusesAPodGroupItDoesNotControl(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	users := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-0"},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: 5},
		}},
	}
	if err := env.Client.Create(t.Context(), users); err != nil {
		t.Fatal(err)
	}
	err := native().SyncGangs(t.Context(), pcs, []Gang{baseGang("llm-0", 3)})
	if err == nil || !strings.Contains(err.Error(), "not controlled by PodCliqueSet llm") {
		t.Errorf("SyncGangs over a PodGroup of someone else: error %v, want one saying it is not controlled by PodCliqueSet llm", err)
	}
	if pg := getPodGroup(t, ns, "llm-0"); pg.UID != users.UID || pg.DeletionTimestamp != nil {
		t.Errorf("the user's PodGroup was replaced or deleted")
	}
}

// A PodCliqueSet deleted and created again under the same name finds the
// PodGroups of its predecessor, which the garbage collector is removing: they
// are left alone, and the gang is made once they are gone.
func TestNativeSyncGangs_LeavesAPredecessorsPodGroupToTheGarbageCollector(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	predecessor := pcs.DeepCopy()
	predecessor.UID = "0c0ffee0-0000-4000-8000-000000000000"
	b := native()
	syncGangs(t, b, predecessor, baseGang("llm-0", 5))
	old := getPodGroup(t, ns, "llm-0")

	syncGangs(t, b, pcs, baseGang("llm-0", 3))
	// The real garbage collector runs in this environment and may already be
	// deleting it (its owner never existed); the backend itself must not touch it.
	pg := getPodGroup(t, ns, "llm-0")
	if pg.UID != old.UID || metav1.GetControllerOf(pg).UID != predecessor.UID || pg.Spec.SchedulingPolicy.Gang.MinCount != 5 {
		t.Errorf("the predecessor's PodGroup was changed: %+v", pg.ObjectMeta)
	}
}

func TestNativeSyncGangs_RejectsMinCountBelowOne(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	if err := native().SyncGangs(t.Context(), pcs, []Gang{baseGang("llm-0", 0)}); err == nil {
		t.Error("SyncGangs accepted a gang of minCount 0")
	}
}

// GangStatus follows a gang from creation to placement, reading what the
// scheduler writes: PodScheduled on pods, PodGroupScheduled on the PodGroup,
// and bindings.
func TestNativeGangStatus_FollowsTheSchedulersVerdict(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	b := native()
	key := client.ObjectKey{Namespace: ns, Name: "llm-0"}
	const noGPU = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	var pods []*corev1.Pod

	steps := []struct {
		name string
		do   func(t *testing.T)
		want Status
	}{{
		name: "before SyncGangs",
		do:   func(*testing.T) {},
		want: Status{Reason: ReasonGangNotFound, Message: "PodGroup llm-0 does not exist"},
	}, {
		name: "gang made, one pod of two",
		do: func(t *testing.T) {
			syncGangs(t, b, pcs, baseGang("llm-0", 2))
			pods = append(pods, newMember(t, b, ns, "llm-0-worker-0"))
		},
		want: Status{Exists: true, MinCount: 2, Reason: ReasonWaitingForPods, Message: "1 of the 2 pods the gang needs exist"},
	}, {
		name: "both pods, scheduler not done",
		do: func(t *testing.T) {
			pods = append(pods, newMember(t, b, ns, "llm-0-worker-1"))
		},
		want: Status{Exists: true, MinCount: 2, Reason: ReasonPending, Message: "waiting for the scheduler"},
	}, {
		name: "the scheduler finds no room",
		do: func(t *testing.T) {
			for _, p := range pods {
				p.Status.Conditions = []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
					Message: noGPU, LastTransitionTime: metav1.Now(),
				}}
				if err := env.Client.Status().Update(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			pg := getPodGroup(t, ns, "llm-0")
			pg.Status.Conditions = []metav1.Condition{{
				Type: schedulingv1alpha2.PodGroupScheduled, Status: metav1.ConditionFalse,
				Reason: schedulingv1alpha2.PodGroupReasonUnschedulable, Message: "pod group is unschedulable", LastTransitionTime: metav1.Now(),
			}}
			if err := env.Client.Status().Update(ctx, pg); err != nil {
				t.Fatal(err)
			}
		},
		want: Status{Exists: true, MinCount: 2, Reason: ReasonUnschedulable, Message: noGPU},
	}, {
		name: "a node is added and both pods are bound",
		do: func(t *testing.T) {
			for _, p := range pods {
				binding := &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name},
					Target:     corev1.ObjectReference{Kind: "Node", Name: "gpu-node-1"},
				}
				if err := env.Client.SubResource("binding").Create(ctx, p, binding); err != nil {
					t.Fatal(err)
				}
			}
		},
		want: Status{Exists: true, Scheduled: true, MinCount: 2, ScheduledPods: 2, Reason: ReasonScheduled, Message: "2 pods placed, 2 needed"},
	}}
	for _, step := range steps {
		step.do(t)
		got, err := b.GangStatus(ctx, key)
		if err != nil {
			t.Fatalf("%s: GangStatus: %v", step.name, err)
		}
		if got != step.want {
			t.Errorf("%s: GangStatus\n got %+v\nwant %+v", step.name, got, step.want)
		}
	}
}

func TestJoinPod_TheAPIServerKeepsTheMembershipOfBackendsThatPlaceGangs(t *testing.T) {
	ns := newNamespace(t)
	for _, b := range []Backend{native(), None{}} {
		pod := newMember(t, b, ns, "pod-"+b.Name())
		got := &corev1.Pod{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		joined := memberOf(got, "llm-0")
		if want := b.Name() == NameNative; joined != want {
			t.Errorf("%s backend: pod joined gang llm-0: %t, want %t (schedulingGroup %+v)", b.Name(), joined, want, got.Spec.SchedulingGroup)
		}
	}
}

func TestNone_MakesNothingAndCountsEveryGangScheduled(t *testing.T) {
	ns := newNamespace(t)
	pcs := newPodCliqueSet(t, ns, "llm")
	syncGangs(t, None{}, pcs, baseGang("llm-0", 3))
	var pgs schedulingv1alpha2.PodGroupList
	if err := env.Client.List(t.Context(), &pgs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pgs.Items) != 0 {
		t.Errorf("none backend made %d PodGroups", len(pgs.Items))
	}
	s, err := None{}.GangStatus(t.Context(), client.ObjectKey{Namespace: ns, Name: "llm-0"})
	if err != nil || !s.Exists || !s.Scheduled || s.Reason != ReasonGangSchedulingOff {
		t.Errorf("none GangStatus = %+v, %v: want existing and scheduled, reason %s", s, err, ReasonGangSchedulingOff)
	}
}
