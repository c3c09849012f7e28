package fleetplan_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

func web(image string, replicas int32, weights ...int32) *fleetv1alpha1.FederatedWorkload {
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
	mu, ms := intstr.FromInt32(2), intstr.FromInt32(1)
	fw := &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{PlacementRef: fleetv1alpha1.PlacementReference{Name: "p"}, Replicas: replicas,
			Template:        runtime.RawExtension{Raw: raw},
			RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms}},
	}
	for i, w := range weights {
		fw.Spec.Division.Weights = append(fw.Spec.Division.Weights, fleetv1alpha1.ClusterWeight{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"n": string(rune('a' + i))}}, Weight: w})
	}
	return fw
}

func clusters(names ...string) []fleetplan.Cluster {
	var out []fleetplan.Cluster
	for _, n := range names {
		out = append(out, fleetplan.Cluster{Name: n, Labels: map[string]string{"n": n}})
	}
	return out
}

func run(t *testing.T, in fleetplan.Input) fleetplan.Result {
	t.Helper()
	in.Kind, in.Startup = member.Deployment, time.Second
	res, err := fleetplan.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Breaches) > 0 {
		t.Fatalf("breaches: %v", res.Breaches)
	}
	return res
}

// The hub's own status ends the plan: complete, every member at its share
// with every unit updated.
func TestRun_EndsOnTheStatusTheHubWrites(t *testing.T) {
	res := run(t, fleetplan.Input{From: web("web:1", 10, 2, 3), Workload: web("web:2", 10, 2, 3), Clusters: clusters("a", "b")})
	c := meta.FindStatusCondition(res.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
	if !res.Done || c == nil || c.Reason != string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) {
		t.Fatalf("done %v, Progressing %+v", res.Done, c)
	}
	if res.Status.UpdatedReplicas != 10 || len(res.Status.Clusters) != 2 || res.Status.Clusters[0].DesiredReplicas != 4 {
		t.Errorf("status %+v", res.Status)
	}
}

// New weights move units between the members within the budgets, no unit
// changing revision; a change of strategy alone moves nothing, as the hub
// would not.
func TestRun_PlaysWhatTheHubWouldDoWithTheChange(t *testing.T) {
	moved := run(t, fleetplan.Input{From: web("web:1", 10, 2, 3), Workload: web("web:1", 10, 1, 1), Clusters: clusters("a", "b")})
	if !moved.Done || len(moved.Waves) == 0 || moved.IdealWaves() != 0 {
		t.Fatalf("re-division: done %v after %d waves (ideal %d)", moved.Done, len(moved.Waves), moved.IdealWaves())
	}
	for _, c := range moved.Status.Clusters {
		if c.DesiredReplicas != 5 || c.AvailableReplicas != 5 {
			t.Errorf("cluster %s at the end: %+v", c.Name, c)
		}
	}
	to := web("web:1", 10, 2, 3)
	to.Spec.RolloutStrategy.Partition = 4
	still := run(t, fleetplan.Input{From: web("web:1", 10, 2, 3), Workload: to, Clusters: clusters("a", "b")})
	if !still.Done || len(still.Waves) != 0 {
		t.Errorf("a strategy change on the same template: done %v after %d waves, want nothing moved", still.Done, len(still.Waves))
	}
}

// A cluster that leaves hands its units to the one that joins; its object is
// deleted once it is empty and it leaves the status.
func TestRun_ALeavingClusterIsEmptiedThenDeleted(t *testing.T) {
	var deleted []string
	in := fleetplan.Input{From: web("web:1", 6), Workload: web("web:2", 6), Before: clusters("a", "b"), Clusters: clusters("a", "c"),
		OnRound: func(rd fleetplan.Round) {
			for name, reqs := range rd.Received {
				for _, r := range reqs {
					if r.Op == fleetsim.OpDelete {
						deleted = append(deleted, name)
					}
				}
			}
		}}
	res := run(t, in)
	if !res.Done || strings.Join(deleted, ",") != "b" {
		t.Fatalf("done %v, deletes in %v; want b's object deleted once", res.Done, deleted)
	}
	var names []string
	for _, c := range res.Status.Clusters {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "a,c" || res.Status.UpdatedReplicas != 6 {
		t.Errorf("status clusters %v, %d updated", names, res.Status.UpdatedReplicas)
	}
}
