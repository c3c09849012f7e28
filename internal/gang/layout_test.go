package gang

import (
	"maps"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func clique(name string, replicas int32, minAvailable *int32) v1alpha1.PodCliqueTemplateSpec {
	return v1alpha1.PodCliqueTemplateSpec{Name: name, Replicas: replicas, MinAvailable: minAvailable}
}

// disaggregated is the shape of examples/disaggregated.yaml: a standalone frontend and
// two scaling groups of leader + workers.
func disaggregated() *v1alpha1.PodCliqueSet {
	return &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm"},
		Spec: v1alpha1.PodCliqueSetSpec{Template: v1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []v1alpha1.PodCliqueTemplateSpec{
				clique("frontend", 3, new(int32(2))),
				clique("prefill-leader", 1, nil),
				clique("prefill-worker", 4, nil), // minAvailable defaults to replicas
				clique("decode-leader", 1, nil),
				clique("decode-worker", 2, new(int32(1))),
			},
			PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
				{Name: "prefill", CliqueNames: []string{"prefill-leader", "prefill-worker"}, Replicas: 3, MinAvailable: new(int32(2))},
				{Name: "decode", CliqueNames: []string{"decode-leader", "decode-worker"}, Replicas: 2}, // minAvailable defaults to 1
			},
		}},
	}
}

func TestBaseGang_MinCountSumsMinAvailableOfStandaloneCliquesAndGroupReplicasBelowMinAvailable(t *testing.T) {
	pcs := disaggregated()
	// frontend 2 + prefill 2 replicas x (1 + 4) + decode 1 replica x (1 + 1)
	const want = 2 + 2*(1+4) + 1*(1+1)
	for _, replica := range []int{0, 1, 2} { // 2 is a surge replica when replicas is 2: a base gang of its own
		g := BaseGang(pcs, replica)
		wantName := "llm-" + strconv.Itoa(replica)
		if g.Name != wantName || g.MinCount != want {
			t.Errorf("BaseGang(llm, %d) = %s minCount %d, want %s minCount %d", replica, g.Name, g.MinCount, wantName, want)
		}
		wantLabels := map[string]string{
			v1alpha1.LabelManagedBy:                v1alpha1.ManagedByValue,
			v1alpha1.LabelPodCliqueSet:             "llm",
			v1alpha1.LabelPodCliqueSetReplicaIndex: strconv.Itoa(replica),
		}
		if !maps.Equal(g.Labels, wantLabels) {
			t.Errorf("BaseGang(llm, %d) labels %v, want %v", replica, g.Labels, wantLabels)
		}
	}
}

func TestBaseGang_MoreReplicasThanMinAvailableDoNotRaiseMinCount(t *testing.T) {
	pcs := disaggregated()
	before := BaseGang(pcs, 0).MinCount
	pcs.Spec.Template.Cliques[0].Replicas = 10               // frontend, minAvailable 2
	pcs.Spec.Template.PodCliqueScalingGroups[0].Replicas = 8 // prefill, minAvailable 2
	if after := BaseGang(pcs, 0).MinCount; after != before {
		t.Errorf("minCount went from %d to %d when only replicas above minAvailable were added", before, after)
	}
}

func TestScaledGang_IsOneGroupReplicasCliques(t *testing.T) {
	pcsg := &v1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0-prefill", Labels: map[string]string{
			v1alpha1.LabelPodCliqueSet:             "llm",
			v1alpha1.LabelPodCliqueSetReplicaIndex: "0",
			v1alpha1.LabelPodCliqueScalingGroup:    "prefill",
			"unrelated":                            "x",
		}},
		Spec: v1alpha1.PodCliqueScalingGroupSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{
			clique("prefill-leader", 1, nil), clique("prefill-worker", 4, new(int32(3))),
		}},
	}
	g := ScaledGang(pcsg, 2)
	if g.Name != "llm-0-prefill-2" || g.MinCount != 1+3 {
		t.Errorf("ScaledGang = %s minCount %d, want llm-0-prefill-2 minCount 4", g.Name, g.MinCount)
	}
	wantLabels := map[string]string{
		v1alpha1.LabelManagedBy:                         v1alpha1.ManagedByValue,
		v1alpha1.LabelPodCliqueSet:                      "llm",
		v1alpha1.LabelPodCliqueSetReplicaIndex:          "0",
		v1alpha1.LabelPodCliqueScalingGroup:             "prefill",
		v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: "2",
	}
	if !maps.Equal(g.Labels, wantLabels) {
		t.Errorf("ScaledGang labels %v, want %v", g.Labels, wantLabels)
	}
}

func TestInBaseGang_SurgeReplicasAreAlwaysScaled(t *testing.T) {
	for _, tc := range []struct {
		index, minAvailable int32
		want                bool
	}{
		{0, 3, true}, {2, 3, true}, {3, 3, false},
		{0, 2, true}, {1, 2, true}, {2, 2, false}, {3, 2, false},
	} {
		if got := InBaseGang(tc.index, tc.minAvailable); got != tc.want {
			t.Errorf("InBaseGang(%d, %d) = %t, want %t", tc.index, tc.minAvailable, got, tc.want)
		}
	}
}
