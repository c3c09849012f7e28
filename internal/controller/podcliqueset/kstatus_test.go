package podcliqueset

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// kstatus (what helm --wait, Flux and Argo CD compute) follows the rollout:
// InProgress while replicas are replaced, Failed once the progress deadline
// passed, Current when every replica runs the new revision.
func TestKstatus_FollowsTheRollout(t *testing.T) {
	from := readExample(t, "../../../examples/disaggregated.yaml")
	to := from.DeepCopy()
	to.Spec.Template.Cliques[0].Template.Spec.Containers[0].Image += "-next"
	to.Spec.ProgressDeadlineSeconds = ptr.To[int32](120)
	fromRev := mustRevision(t, from)
	toRev := mustRevision(t, to)

	seen := map[status.Status]bool{}
	check := func(tree rollout.TreePlan) {
		pcs := to.DeepCopy()
		pcs.Generation = 2
		pcs.Status = *desiredStatus(pcs, tree.Set, nil, nil)
		got := kstatus(t, pcs)
		want := status.InProgressStatus
		switch {
		case tree.Set.Status.DeadlineExceeded:
			want = status.FailedStatus
		case tree.Set.Status.Complete:
			want = status.CurrentStatus
		}
		if got != want {
			t.Fatalf("kstatus %s, want %s for Progressing %+v", got, want, tree.Set.Status.Conditions[1])
		}
		seen[got] = true
	}
	var lastIn rollout.SetInput
	var last rollout.TreePlan
	run := func(faults []simulate.Fault) {
		simulate.Run(simulate.Scenario{
			From: &from.Spec, FromRevision: fromRev, To: &to.Spec, ToRevision: toRev, Startup: 10 * time.Second, Faults: faults,
			MaxTime: 30 * time.Minute,
			OnPlan: func(in rollout.SetInput, tree rollout.TreePlan) {
				check(tree)
				lastIn, last = in, tree
			},
		})
	}
	run(nil)
	run([]simulate.Fault{{Role: "frontend", After: 1}}) // a replacement that never gets ready
	// The simulation stops once nothing moves; the operator looks again when the
	// deadline passes.
	lastIn.Previous, lastIn.Now = last.Set.Status.Progress, lastIn.Now.Add(5*time.Minute)
	stalled, err := rollout.PlanTree(lastIn)
	if err != nil {
		t.Fatal(err)
	}
	check(stalled)
	for _, s := range []status.Status{status.InProgressStatus, status.FailedStatus, status.CurrentStatus} {
		if !seen[s] {
			t.Errorf("no plan of the two rollouts computed kstatus %s", s)
		}
	}
}

func kstatus(t *testing.T, pcs *v1alpha1.PodCliqueSet) status.Status {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pcs)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("PodCliqueSet")
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func mustRevision(t *testing.T, pcs *v1alpha1.PodCliqueSet) rollout.SetRevision {
	t.Helper()
	rev, err := revision.ForSpec(pcs.Name, &pcs.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}
