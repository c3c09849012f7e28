package division

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func TestShares(t *testing.T) {
	cases := []struct {
		name     string
		replicas int32
		clusters []string
		weights  []int32
		want     []int32
	}{
		{"equal split", 10, []string{"a", "b"}, []int32{1, 1}, []int32{5, 5}},
		{"remainder to the earliest names", 10, []string{"a", "b", "c"}, []int32{1, 1, 1}, []int32{4, 3, 3}},
		{"remainder by name, not by position", 10, []string{"c", "b", "a"}, []int32{1, 1, 1}, []int32{3, 3, 4}},
		{"plain string order: cluster10 before cluster2", 3, []string{"cluster2", "cluster10"}, []int32{1, 1}, []int32{1, 2}},
		{"weights 2:3 of 10", 10, []string{"eu", "us"}, []int32{2, 3}, []int32{4, 6}},
		{"weights with remainder", 7, []string{"a", "b", "c"}, []int32{2, 1, 1}, []int32{4, 2, 1}},
		{"a zero weight gets nothing, not even remainder", 5, []string{"a", "b", "c"}, []int32{0, 1, 1}, []int32{0, 3, 2}},
		{"total weight 0", 5, []string{"a", "b"}, []int32{0, 0}, []int32{0, 0}},
		{"fewer replicas than clusters", 2, []string{"a", "b", "c"}, []int32{1, 1, 1}, []int32{1, 1, 0}},
		{"no replicas", 0, []string{"a"}, []int32{1}, []int32{0}},
		{"no clusters", 4, nil, nil, []int32{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Shares(c.replicas, c.clusters, c.weights)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestWeights_FirstMatchingEntryWins(t *testing.T) {
	lbls := map[string]map[string]string{
		"eu-1": {"region": "eu", "tier": "gold"},
		"eu-2": {"region": "eu"},
		"us-1": {"region": "us"},
	}
	sel := func(k, v string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	clusters := []string{"eu-1", "eu-2", "us-1"}
	got, err := Weights([]fleetv1alpha1.ClusterWeight{
		{ClusterSelector: sel("tier", "gold"), Weight: 5},
		{ClusterSelector: sel("region", "eu"), Weight: 2},
	}, lbls, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{5, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got, _ = Weights(nil, lbls, clusters)
	if want := []int32{1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("no weights: got %v, want %v", got, want)
	}
}
