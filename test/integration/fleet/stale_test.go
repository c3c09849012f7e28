package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// A round that reads the workload from a cache that has not yet seen the
// hub's own last status write sends nothing to any member. The status is
// the hub's memory of what it granted a member it cannot read: here the
// first member, cut off right after it was started with the whole budget
// (maxUnavailable 2, maxSurge 1) and took two pods down. The status of the
// round before, settled on the old template, remembers no grant of the new
// one for it and every pod of it available: planned from that, the round
// started the second member with the whole budget too (4 pods down, 2
// above), and only its status write then failed on the resourceVersion.
// The status is now written first, so that write fails before any member
// is sent a thing; the next round, on the workload as it is, charges the
// cut-off member its grant and starts no one.
func TestFederatedWorkload_ARoundOnAStaleWorkloadSendsNothing(t *testing.T) {
	pf := newPlanFleet(t, "fw-stale", map[string]*testenv.Cluster{"eu-1": memberEnv, "us-1": member2Env},
		map[string]string{"eu-1": "eu", "us-1": "us"}, "eu-1")
	cut, other := pf.name("eu-1"), pf.name("us-1")
	from, _ := pf.manifests()
	pf.createWorkload(from)
	for i := 0; !complete(pf.workload()); i++ {
		if i == 10 {
			t.Fatalf("the workload did not settle in 10 rounds: %s", statusSummary(pf.workload().Status))
		}
		pf.step(pf.reconcile("settling").all())
	}

	to := from.DeepCopy()
	to.Spec.Template.Raw = []byte(strings.Replace(string(to.Spec.Template.Raw), "web:v1", "web:v2", 1))
	pf.change(to)
	stale := pf.workload() // what the first round of the rollout reads
	sent := pf.reconcile("the rollout's first round")
	if g := entry(pf.workload(), cut).Grant; !g.Started || g.MaxUnavailable != 2 || g.MaxSurge != 1 {
		t.Fatalf("%s was not started with the whole budget: %+v", cut, g)
	}
	if g := entry(pf.workload(), other).Grant; g.Started {
		t.Fatalf("%s was started beside %s: %+v", other, cut, g)
	}
	pf.step(sent.all())
	pf.proxies[cut].close()
	waitForReady(t, cut, metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonUnreachable, 30*time.Second)

	// A round on the workload as the first round read it. The round that
	// counts is one planned to start the other member; a round that could
	// not read the other member (a read timing out on a loaded machine)
	// plans no write, so it is made again, a few times at most. Every one
	// must send nothing.
	pf.hub.Client = &staleWorkload{Client: hubEnv.Client, fw: stale}
	// The round's own account (its plan, at V(1)) goes to the test's log,
	// shown when the test fails.
	ctx := ctrl.LoggerInto(context.Background(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
	counted := false
	for attempt := 0; attempt < 5 && !counted; attempt++ {
		pf.rec.take()
		staleBefore := counterValue(t, "lockstep_fleet_stale_rounds_total")
		_, err := pf.hub.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: pf.ns, Name: fwName}})
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("the round on the stale workload: %v", err)
		}
		if got := pf.rec.take().all(); len(got) > 0 {
			t.Fatalf("the round on the stale workload sent %d request(s): %s", len(got), strings.Join(hubRequests(got), "; "))
		}
		// At least: a hub of another test in this process may count its own.
		counted = counterValue(t, "lockstep_fleet_stale_rounds_total")-staleBefore >= 1
	}
	if !counted {
		t.Errorf("lockstep_fleet_stale_rounds_total did not grow over 5 rounds on the stale workload, want them counted")
	}

	pf.hub.Client = hubEnv.Client
	pf.reconcile("the next round")
	fw := pf.workload()
	if g := entry(fw, other).Grant; g.Started {
		t.Errorf("%s was started while %s, cut off, may use the whole budget: %+v", other, cut, g)
	}
	if rev := pf.deployment(other).GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision]; rev == fw.Status.UpdateRevision {
		t.Errorf("%s's Deployment holds the new template while %s, cut off, may use the whole budget", other, cut)
	}
	if g := entry(fw, cut).Grant; !g.Started || g.MaxUnavailable != 2 || g.MaxSurge != 1 {
		t.Errorf("%s's grant changed while it was cut off: %+v", cut, g)
	}
	t.Logf("after the cut: %s", statusSummary(fw.Status))
}

// staleWorkload serves one FederatedWorkload as it was, as a cache that
// trails the hub's own writes does; everything else is read and written
// through.
type staleWorkload struct {
	client.Client
	fw *fleetv1alpha1.FederatedWorkload
}

func (c *staleWorkload) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if fw, ok := obj.(*fleetv1alpha1.FederatedWorkload); ok && key == client.ObjectKeyFromObject(c.fw) {
		c.fw.DeepCopyInto(fw)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func entry(fw *fleetv1alpha1.FederatedWorkload, name string) *fleetv1alpha1.FederatedClusterStatus {
	for i := range fw.Status.Clusters {
		if fw.Status.Clusters[i].Name == name {
			return &fw.Status.Clusters[i]
		}
	}
	return &fleetv1alpha1.FederatedClusterStatus{}
}

// counterValue is the value of a counter without labels in the metrics
// registry (0 when it is not there).
func counterValue(t *testing.T, name string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
