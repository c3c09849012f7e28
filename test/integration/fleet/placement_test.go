package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/hub/placement"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// The placement tests play the worked decision updates against the hub's
// apiserver with a watcher on the PlacementDecisions. MemberClusters here get
// their Ready condition from the test, not from probes, so only the Placement
// controller runs.

var names = fleetsim.ClusterNames

// ensureFleet registers cluster000..cluster250 and puts them in their starting
// state: all Ready, label "s1" "yes" on cluster001..cluster150 (cluster000
// joins by setting it), "s3" on cluster001..cluster250, "all" like "s1".
// Earlier tests (or a MemberCluster controller of another test) may have
// changed them, so every test starts here.
func ensureFleet(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i <= 250; i++ {
		name := fmt.Sprintf("cluster%03d", i)
		in150, in250 := yesNo(i >= 1 && i <= 150), yesNo(i >= 1)
		want := map[string]string{"s1": in150, "all": in150, "s3": in250}
		var mc fleetv1alpha1.MemberCluster
		err := hubEnv.Client.Get(ctx, client.ObjectKey{Name: name}, &mc)
		switch {
		case apierrors.IsNotFound(err):
			mc = fleetv1alpha1.MemberCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: want},
				Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
					Namespace: "lockstep-fleet", Name: "shared",
				}},
			}
			if err := hubEnv.Client.Create(ctx, &mc); err != nil {
				t.Fatalf("creating %s: %v", name, err)
			}
		case err != nil:
			t.Fatal(err)
		case !maps.Equal(mc.Labels, want):
			patch := client.MergeFrom(mc.DeepCopy())
			mc.Labels = want
			if err := hubEnv.Client.Patch(ctx, &mc, patch); err != nil {
				t.Fatalf("labelling %s: %v", name, err)
			}
		}
		if !meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)) {
			setReady(t, name, true)
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// setReady writes the member's Ready condition as the MemberCluster
// controller would.
func setReady(t *testing.T, name string, ready bool) {
	t.Helper()
	var mc fleetv1alpha1.MemberCluster
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	c := metav1.Condition{Type: string(fleetv1alpha1.MemberClusterReady), Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.MemberClusterReasonReachable)}
	if !ready {
		c.Status, c.Reason = metav1.ConditionFalse, string(fleetv1alpha1.MemberClusterReasonUnreachable)
	}
	meta.SetStatusCondition(&mc.Status.Conditions, c)
	if err := hubEnv.Client.Status().Update(context.Background(), &mc); err != nil {
		t.Fatalf("setting Ready of %s: %v", name, err)
	}
}

func labelCluster000(t *testing.T, key, value string) {
	const name = "cluster000"
	t.Helper()
	var mc fleetv1alpha1.MemberCluster
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Labels[key] = value
	if err := hubEnv.Client.Patch(context.Background(), &mc, patch); err != nil {
		t.Fatalf("labelling %s: %v", name, err)
	}
}

// runPlacementController runs the Placement controller with its writes to
// PlacementDecisions going through wrap (nil: straight to the apiserver).
func runPlacementController(t *testing.T, wrap func(client.Client) client.Client) func() {
	t.Helper()
	return runManager(t, func(mgr ctrl.Manager) error {
		c := mgr.GetClient()
		if wrap != nil {
			c = wrap(c)
		}
		return (&placement.Reconciler{
			Client: c, APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
			Recorder: mgr.GetEventRecorder("lockstep-hub-placement"),
		}).SetupWithManager(mgr)
	})
}

func createPlacement(t *testing.T, ns string, sel *metav1.LabelSelector, perGroup string, update fleetv1alpha1.DecisionUpdateType) {
	t.Helper()
	pl := &fleetv1alpha1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placementName},
		Spec:       fleetv1alpha1.PlacementSpec{ClusterSelector: sel},
	}
	if perGroup != "" {
		v := intstr.Parse(perGroup)
		pl.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = &v
	}
	pl.Spec.DecisionStrategy.UpdateStrategy.Type = update
	if err := hubEnv.Client.Create(context.Background(), pl); err != nil {
		t.Fatalf("creating Placement %s/%s: %v", ns, placementName, err)
	}
}

func setPerGroup(t *testing.T, ns, perGroup string) {
	t.Helper()
	var pl fleetv1alpha1.Placement
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: placementName}, &pl); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pl.DeepCopy())
	v := intstr.Parse(perGroup)
	pl.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = &v
	if err := hubEnv.Client.Patch(context.Background(), &pl, patch); err != nil {
		t.Fatalf("setting clustersPerDecisionGroup: %v", err)
	}
}

// startWatcher watches the slices of the placement in ns; what must stay is set with
// SetStay once the state before the change is there.
func startWatcher(t *testing.T, ns string) *fleetwatch.Watcher {
	t.Helper()
	w, err := fleetwatch.Start(context.Background(), hubEnv.Client, ns, placementName, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// placementName names every test placement (each in a namespace of its own).
const placementName = "p"

// sliceWant is a slice of the test placement in group "".
type sliceWant struct {
	n, groupIndex int
	clusters      []string
}

func state(want []sliceWant) []fleet.Slice {
	out := make([]fleet.Slice, 0, len(want))
	for _, s := range want {
		out = append(out, fleet.Slice{Name: fleet.SliceName(placementName, s.n), Labels: fleet.SliceLabels(placementName, "", s.groupIndex), Clusters: s.clusters})
	}
	return out
}

func waitForState(t *testing.T, w *fleetwatch.Watcher, want []sliceWant) {
	t.Helper()
	ws := state(want)
	if err := w.WaitFor(context.Background(), 30*time.Second, func(s []fleet.Slice) bool { return fleetwatch.Equal(s, ws) }); err != nil {
		t.Fatalf("waiting for\n%s: %v", fleetsim.Render(ws), err)
	}
}

// assertSeen checks that the watcher observed want at some point.
func assertSeen(t *testing.T, w *fleetwatch.Watcher, what string, want []sliceWant) {
	t.Helper()
	ws := state(want)
	if !slices.ContainsFunc(w.History(), func(s []fleet.Slice) bool { return fleetwatch.Equal(s, ws) }) {
		t.Errorf("%s: never observed\n%s", what, fleetsim.Render(ws))
	}
}

func assertNoViolations(t *testing.T, w *fleetwatch.Watcher) {
	t.Helper()
	for _, v := range w.Violations() {
		t.Errorf("violation: %s", v)
	}
	if peak := w.PeakSliceSize(); peak > fleetv1alpha1.MaxClustersPerDecision {
		t.Errorf("peak slice size %d", peak)
	}
}

// waitForSettled waits for DecisionsSettled=True on the current generation and
// returns the placement.
func waitForSettled(t *testing.T, ns string) *fleetv1alpha1.Placement {
	t.Helper()
	var pl fleetv1alpha1.Placement
	eventually(t, 30*time.Second, "DecisionsSettled", func() (bool, string) {
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: placementName}, &pl); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		if c == nil {
			return false, "no condition"
		}
		return c.Status == metav1.ConditionTrue && pl.Status.ObservedGeneration == pl.Generation, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
	return &pl
}

// placementKstatus is the kstatus of pl, as helm --wait, Flux and Argo CD
// compute it.
func placementKstatus(t *testing.T, pl *fleetv1alpha1.Placement) kstatus.Status {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pl)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(fleetv1alpha1.GroupVersion.String())
	u.SetKind("Placement")
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func TestPlacement_ClusterJoinsLeavesAndTurnsNotReady_NoneOfTheOthersIsEverMissing(t *testing.T) {
	ensureFleet(t)
	ns := newNamespace(t, "joins")
	runPlacementController(t, nil)
	createPlacement(t, ns, &metav1.LabelSelector{MatchLabels: map[string]string{"s1": "yes"}}, "", "")
	w := startWatcher(t, ns)
	waitForState(t, w, []sliceWant{{1, 0, names("001-100")}, {2, 0, names("101-150")}})
	pl := waitForSettled(t, ns)
	if got := w.Union(); !slices.Equal(got, names("001-150")) {
		t.Fatalf("union %v, want cluster001..cluster150", got)
	}
	var pds fleetv1alpha1.PlacementDecisionList
	if err := hubEnv.Client.List(context.Background(), &pds, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, pd := range pds.Items {
		if ref := metav1.GetControllerOf(&pd); ref == nil || ref.UID != pl.UID || ref.Kind != "Placement" {
			t.Errorf("%s is not controlled by its Placement (the garbage collector would not remove it): %+v", pd.Name, pd.OwnerReferences)
		}
	}
	w.SetStay(names("001-150"))
	wantGroups := []fleetv1alpha1.DecisionGroupStatus{{DecisionGroupIndex: 0, Decisions: []string{"p-decision-1", "p-decision-2"}, ClusterCount: 150}}
	if pl.Status.NumberOfSelectedClusters != 150 || pl.Status.NumberOfDecisionGroups != 1 || !slices.EqualFunc(pl.Status.DecisionGroups, wantGroups, sameGroup) {
		t.Errorf("status: %d selected, %d groups %+v; want 150, 1 %+v", pl.Status.NumberOfSelectedClusters, pl.Status.NumberOfDecisionGroups, pl.Status.DecisionGroups, wantGroups)
	}
	joined := []sliceWant{{1, 0, names("000-099")}, {2, 0, names("100-150")}}
	left := []sliceWant{{1, 0, names("001-100")}, {2, 0, names("101-150")}}

	t.Run("cluster000 joins at the front", func(t *testing.T) {
		labelCluster000(t, "s1", "yes")
		waitForState(t, w, joined)
		assertSeen(t, w, "slice 2 takes cluster100 before slice 1 lets it go", []sliceWant{{1, 0, names("001-100")}, {2, 0, names("100-150")}})
		waitForSettled(t, ns)
		assertNoViolations(t, w)
	})
	t.Run("cluster000 leaves", func(t *testing.T) {
		labelCluster000(t, "s1", "no")
		waitForState(t, w, left)
		assertSeen(t, w, "surge: slice 1 holds cluster100 while slice 2 still does", []sliceWant{{1, 0, names("001-100")}, {2, 0, names("100-150")}})
		waitForSettled(t, ns)
		assertNoViolations(t, w)
	})
	t.Run("cluster000 turns not Ready and is dropped the same way", func(t *testing.T) {
		labelCluster000(t, "s1", "yes")
		waitForState(t, w, joined)
		before := len(w.History())
		setReady(t, "cluster000", false)
		defer setReady(t, "cluster000", true)
		defer labelCluster000(t, "s1", "no")
		waitForState(t, w, left)
		after := w.History()[before:]
		surge := state([]sliceWant{{1, 0, names("001-100")}, {2, 0, names("100-150")}})
		if !slices.ContainsFunc(after, func(s []fleet.Slice) bool { return fleetwatch.Equal(s, surge) }) {
			t.Errorf("the drop did not go through the surge state\n%s", fleetsim.Render(surge))
		}
		assertNoViolations(t, w)
	})
}

func sameGroup(a, b fleetv1alpha1.DecisionGroupStatus) bool {
	return a.DecisionGroupIndex == b.DecisionGroupIndex && a.DecisionGroupName == b.DecisionGroupName &&
		a.ClusterCount == b.ClusterCount && slices.Equal(a.Decisions, b.Decisions)
}

// before and after of the regrouping of 250 clusters from 100% to 50 per group.
var (
	threeSlices = []sliceWant{{1, 0, names("001-100")}, {2, 0, names("101-200")}, {3, 0, names("201-250")}}
	fiveGroups  = []sliceWant{{1, 0, names("001-050")}, {2, 1, names("051-100")}, {3, 2, names("101-150")}, {4, 3, names("151-200")}, {5, 4, names("201-250")}}
)

func TestPlacement_RegroupingTo50_SurgesWithinHundredAndSettles(t *testing.T) {
	ensureFleet(t)
	ns := newNamespace(t, "regroup")
	runPlacementController(t, nil)
	createPlacement(t, ns, &metav1.LabelSelector{MatchLabels: map[string]string{"s3": "yes"}}, "100%", "")
	w := startWatcher(t, ns)
	waitForState(t, w, threeSlices)
	waitForSettled(t, ns)
	w.SetStay(names("001-250"))

	setPerGroup(t, ns, "50")
	waitForState(t, w, fiveGroups)
	assertSeen(t, w, "slice 3 holds the union of 100 while slice 2 still holds 101-200", []sliceWant{
		{1, 0, names("001-100")}, {2, 0, names("101-200")}, {3, 2, names("101-150", "201-250")}, {4, 3, names("151-200")}, {5, 4, names("201-250")},
	})
	pl := waitForSettled(t, ns)
	if pl.Status.NumberOfDecisionGroups != 5 || len(pl.Status.DecisionGroups) != 5 {
		t.Errorf("status: %d decision groups, want 5", pl.Status.NumberOfDecisionGroups)
	}
	assertNoViolations(t, w)
	if peak := w.PeakSliceSize(); peak != 100 {
		t.Errorf("peak slice size %d, want 100", peak)
	}
}

// All rewrites slice 1 first, so cluster100 is in no slice until slice 2 is
// written: the watcher must catch it, or it could not catch anything.
func TestPlacement_AllLosesAMovingCluster_TheWatcherSeesIt(t *testing.T) {
	ensureFleet(t)
	ns := newNamespace(t, "all")
	runPlacementController(t, nil)
	createPlacement(t, ns, &metav1.LabelSelector{MatchLabels: map[string]string{"all": "yes"}}, "", fleetv1alpha1.AllDecisionUpdate)
	w := startWatcher(t, ns)
	waitForState(t, w, []sliceWant{{1, 0, names("001-100")}, {2, 0, names("101-150")}})
	waitForSettled(t, ns)
	w.SetStay(names("001-150"))

	labelCluster000(t, "all", "yes")
	defer labelCluster000(t, "all", "no")
	waitForState(t, w, []sliceWant{{1, 0, names("000-099")}, {2, 0, names("100-150")}})
	var absent []string
	for _, v := range w.Violations() {
		absent = append(absent, v.Cluster)
	}
	if !slices.Equal(absent, []string{"cluster100"}) {
		t.Errorf("violations %v, want cluster100 absent once", w.Violations())
	}
}

// errCrash is what the hub's writes return once it has "crashed".
var errCrash = errors.New("hub crashed")

// crashingClient lets the first n writes to PlacementDecisions in one namespace
// through, then fails every write and calls crash once.
type crashingClient struct {
	client.Client
	ns      string
	left    *atomic.Int32
	crashed func()
}

func (c crashingClient) pass(obj client.Object) error {
	if _, ok := obj.(*fleetv1alpha1.PlacementDecision); !ok || obj.GetNamespace() != c.ns {
		return nil
	}
	if c.left.Add(-1) < 0 {
		c.crashed()
		return errCrash
	}
	return nil
}

func (c crashingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.pass(obj); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c crashingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.pass(obj); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c crashingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.pass(obj); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c crashingClient) Status() client.SubResourceWriter {
	return crashingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type crashingStatus struct {
	client.SubResourceWriter
	c crashingClient
}

func (s crashingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.c.pass(obj); err != nil {
		return err
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// A hub that dies after any number of writes of the regrouping leaves slices a
// new hub carries on from, and no cluster is missing at any point.
func TestPlacement_HubRestartedMidUpdate_ResumesWithoutAbsence(t *testing.T) {
	ensureFleet(t)
	// The regrouping takes 4 surge writes and 3 finalize writes; a Create is two.
	for _, writes := range []int32{1, 2, 3, 5, 6} {
		t.Run(fmt.Sprintf("crash after %d writes", writes), func(t *testing.T) {
			ns := newNamespace(t, "restart")
			stop := runPlacementController(t, nil)
			createPlacement(t, ns, &metav1.LabelSelector{MatchLabels: map[string]string{"s3": "yes"}}, "100%", "")
			w := startWatcher(t, ns)
			waitForState(t, w, threeSlices)
			waitForSettled(t, ns)
			w.SetStay(names("001-250"))
			stop()

			left := &atomic.Int32{}
			left.Store(writes)
			crashed := make(chan struct{})
			var once sync.Once
			stopCrashing := runPlacementController(t, func(c client.Client) client.Client {
				return crashingClient{Client: c, ns: ns, left: left, crashed: func() { once.Do(func() { close(crashed) }) }}
			})
			setPerGroup(t, ns, "50")
			select {
			case <-crashed:
			case <-time.After(30 * time.Second):
				t.Fatal("the hub never reached its crash point")
			}
			stopCrashing()
			mid := w.Slices()
			if fleetwatch.Equal(mid, state(fiveGroups)) {
				t.Fatalf("settled before the crash:\n%s", fleetsim.Render(mid))
			}
			t.Logf("state at the crash:\n%s", fleetsim.Render(mid))
			// the status was written before the decisions: mid-update, kstatus
			// (helm --wait, Flux, Argo CD) waits
			var pl fleetv1alpha1.Placement
			if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: placementName}, &pl); err != nil {
				t.Fatal(err)
			}
			if k := placementKstatus(t, &pl); k != kstatus.InProgressStatus {
				t.Errorf("kstatus mid-update %s, want InProgress; conditions %+v", k, pl.Status.Conditions)
			}

			runPlacementController(t, nil)
			waitForState(t, w, fiveGroups)
			if k := placementKstatus(t, waitForSettled(t, ns)); k != kstatus.CurrentStatus {
				t.Errorf("kstatus once settled %s, want Current", k)
			}
			assertNoViolations(t, w)
		})
	}
}
