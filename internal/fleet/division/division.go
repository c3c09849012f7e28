// Package division divides a FederatedWorkload's replicas over its clusters by
// division.weights: the rule the hub applies and `lockstep plan` simulates.
package division

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// Weights are the clusters' weights under division.weights: the first entry
// whose selector matches a cluster's labels gives its weight; with no entries
// every cluster weighs 1, with entries a cluster none matches weighs 0.
func Weights(weights []fleetv1alpha1.ClusterWeight, clusterLabels map[string]map[string]string, clusters []string) ([]int32, error) {
	out := make([]int32, len(clusters))
	if len(weights) == 0 {
		for i := range out {
			out[i] = 1
		}
		return out, nil
	}
	sels := make([]labels.Selector, len(weights))
	for i := range weights {
		s, err := metav1.LabelSelectorAsSelector(&weights[i].ClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("division.weights[%d].clusterSelector: %w", i, err)
		}
		sels[i] = s
	}
	for i, c := range clusters {
		for j, s := range sels {
			if s.Matches(labels.Set(clusterLabels[c])) {
				out[i] = weights[j].Weight
				break
			}
		}
	}
	return out, nil
}

// Shares divides replicas over the clusters by weight: each gets replicas ×
// weight / total rounded down, and the remainder goes one by one to the
// clusters of non-zero weight earliest in name order. Clusters and weights are
// parallel; the result is in the same order. With a total weight of 0 nobody
// gets anything.
func Shares(replicas int32, clusters []string, weights []int32) []int32 {
	out := make([]int32, len(clusters))
	var total int64
	for _, w := range weights {
		total += int64(max(w, 0))
	}
	if total == 0 || replicas <= 0 {
		return out
	}
	given := int32(0)
	for i, w := range weights {
		out[i] = int32(int64(replicas) * int64(max(w, 0)) / total)
		given += out[i]
	}
	order := make([]int, len(clusters))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case clusters[a] < clusters[b]:
			return -1
		case clusters[a] > clusters[b]:
			return 1
		}
		return 0
	})
	for given < replicas {
		for _, i := range order {
			if given == replicas {
				break
			}
			if weights[i] > 0 {
				out[i]++
				given++
			}
		}
	}
	return out
}
