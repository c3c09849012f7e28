package fleetsim_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// Random fleets of PodCliqueSet members, RollingUpdate or ReplicaRecreate
// (the type may change with the image), rolled to a new image under a random
// global strategy by the hub's own rounds: at no wave are there more than
// replicas + maxSurge units, fewer than replicas − maxUnavailable available
// or more than replicas − partition on the new image, and the rollout ends.
//
// A ReplicaRecreate template may carry limits of its own, as one stored
// before admission refused them would, and the simulated members honour
// whatever limits their objects hold: only the hub writing its own keeps the
// members within the budget. Every object the hub writes holds exactly the
// limits its type takes.
func TestPodCliqueSetFleet_KeepsTheGlobalBudgetUnderEitherStrategy(t *testing.T) {
	types := []string{"", "RollingUpdate", "ReplicaRecreate"}
	ownMaxUnavailable := []any{nil, int64(1), int64(2), int64(3), "50%", "100%"}
	ownMaxSurge := []any{nil, int64(0), int64(1), int64(2), "100%"}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "clusters")
		replicas := int32(rapid.IntRange(1, 10).Draw(t, "replicas"))
		mu := int32(rapid.IntRange(1, int(min(replicas, 3))).Draw(t, "maxUnavailable"))
		ms := int32(rapid.IntRange(0, 2).Draw(t, "maxSurge"))
		partition := int32(rapid.IntRange(0, int(replicas)).Draw(t, "partition"))
		template := func(label, image string) []byte {
			strategy := map[string]any{}
			if ty := rapid.SampledFrom(types).Draw(t, label+" type"); ty != "" {
				strategy["type"] = ty
				if ty == "ReplicaRecreate" {
					own := map[string]any{}
					if v := rapid.SampledFrom(ownMaxUnavailable).Draw(t, label+" own maxUnavailable"); v != nil {
						own["maxUnavailable"] = v
					}
					if v := rapid.SampledFrom(ownMaxSurge).Draw(t, label+" own maxSurge"); v != nil {
						own["maxSurge"] = v
					}
					if len(own) > 0 {
						strategy["rollingUpdate"] = own
					}
				}
			}
			raw, err := json.Marshal(map[string]any{
				"apiVersion": "lockstep.dev/v1alpha1", "kind": "PodCliqueSet",
				"spec": map[string]any{"updateStrategy": strategy, "template": map[string]any{"cliques": []any{map[string]any{
					"name": "web", "replicas": int64(1),
					"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}},
				}}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		workload := func(raw []byte) *fleetv1alpha1.FederatedWorkload {
			u, s := intstr.FromInt32(mu), intstr.FromInt32(ms)
			return &fleetv1alpha1.FederatedWorkload{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Spec: fleetv1alpha1.FederatedWorkloadSpec{
					PlacementRef:    fleetv1alpha1.PlacementReference{Name: "fleet"},
					Replicas:        replicas,
					Template:        runtime.RawExtension{Raw: raw},
					RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &u, MaxSurge: &s, Partition: partition},
				},
			}
		}
		from, to := workload(template("from", "web:1")), workload(template("to", "web:2"))
		clusters := make([]fleetplan.Cluster, n)
		for i := range clusters {
			clusters[i] = fleetplan.Cluster{Name: fmt.Sprintf("m%d", i+1)}
		}
		in := fleetplan.Input{From: from, Workload: to, Kind: member.PodCliqueSet, Clusters: clusters, Startup: time.Second,
			OnRound: func(rd fleetplan.Round) { checkWrittenLimits(t, rd) }}
		res, err := fleetplan.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Breaches) > 0 {
			t.Fatalf("bounds broken: %v", res.Breaches)
		}
		for i, w := range res.Waves {
			var updated int32
			for _, m := range w.Members {
				updated += m.Updated
			}
			if updated > res.First.AllowedUpdated {
				t.Fatalf("wave %d: %d units on the new image, the partition allows %d", i+1, updated, res.First.AllowedUpdated)
			}
		}
		if !res.Done {
			t.Fatalf("not done after %d waves", len(res.Waves))
		}
	})
}

// checkWrittenLimits: every PodCliqueSet the hub writes holds the limits the
// fleet charges a ReplicaRecreate member for, and none under another type.
func checkWrittenLimits(t *rapid.T, rd fleetplan.Round) {
	for cluster, reqs := range rd.Received {
		for _, r := range reqs {
			if r.Op == "Delete" {
				continue
			}
			ty, _, _ := unstructured.NestedString(r.Object.Object, "spec", "updateStrategy", "type")
			ru, _, _ := unstructured.NestedMap(r.Object.Object, "spec", "updateStrategy", "rollingUpdate")
			mu, hasMU := ru["maxUnavailable"]
			ms, hasMS := ru["maxSurge"]
			switch {
			case ty == "ReplicaRecreate" && (mu != int64(1) || ms != int64(0)):
				t.Fatalf("%s: a ReplicaRecreate member written with maxUnavailable %v, maxSurge %v", cluster, mu, ms)
			case ty != "ReplicaRecreate" && (hasMU || hasMS):
				t.Fatalf("%s: a %q member written with maxUnavailable %v, maxSurge %v", cluster, ty, mu, ms)
			}
		}
	}
}
