package placement

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// applier applies one plan's writes, one at a time and in order, each update
// and delete conditional on the resourceVersion that was read.
type applier struct {
	client    client.Client
	scheme    *runtime.Scheme
	placement *fleetv1alpha1.Placement
	// observed are the slices the plan was made from, by name.
	observed map[string]*fleetv1alpha1.PlacementDecision
}

func (a *applier) apply(ctx context.Context, w fleet.Write) error {
	switch w.Op {
	case fleet.Create:
		return a.create(ctx, w.Slice)
	case fleet.Update:
		return a.update(ctx, w.Slice)
	case fleet.Delete:
		return a.delete(ctx, w.Slice.Name)
	default:
		return fmt.Errorf("unknown write %q to PlacementDecision %s", w.Op, w.Slice.Name)
	}
}

// create creates the slice empty, then writes its clusters: the apiserver takes
// no status on create. The empty object removes nothing from the union.
func (a *applier) create(ctx context.Context, s fleet.Slice) error {
	pd := &fleetv1alpha1.PlacementDecision{}
	pd.Namespace, pd.Name = a.placement.Namespace, s.Name
	pd.Labels = maps.Clone(s.Labels)
	if err := controllerutil.SetControllerReference(a.placement, pd, a.scheme); err != nil {
		return fmt.Errorf("owning PlacementDecision %s: %w", s.Name, err)
	}
	if err := a.client.Create(ctx, pd); err != nil {
		return fmt.Errorf("creating PlacementDecision %s: %w", s.Name, err)
	}
	pd.Status.Decisions = decisions(s.Clusters)
	if err := a.client.Status().Update(ctx, pd); err != nil {
		return fmt.Errorf("writing the clusters of new PlacementDecision %s: %w", s.Name, err)
	}
	a.observed[s.Name] = pd
	return nil
}

// update sets the slice's planner-owned labels, then its clusters, each write
// carrying the resourceVersion the plan was made from (or the one the previous
// write returned).
func (a *applier) update(ctx context.Context, s fleet.Slice) error {
	cur, ok := a.observed[s.Name]
	if !ok {
		return fmt.Errorf("updating PlacementDecision %s: it was not in the read the plan was made from", s.Name)
	}
	pd := cur.DeepCopy()
	if !hasLabels(pd.Labels, s.Labels) {
		if pd.Labels == nil {
			pd.Labels = map[string]string{}
		}
		maps.Copy(pd.Labels, s.Labels)
		if err := a.client.Update(ctx, pd); err != nil {
			return fmt.Errorf("relabelling PlacementDecision %s: %w", s.Name, err)
		}
	}
	pd.Status.Decisions = decisions(s.Clusters)
	if err := a.client.Status().Update(ctx, pd); err != nil {
		return fmt.Errorf("writing the clusters of PlacementDecision %s: %w", s.Name, err)
	}
	a.observed[s.Name] = pd
	return nil
}

func (a *applier) delete(ctx context.Context, name string) error {
	cur, ok := a.observed[name]
	if !ok {
		return fmt.Errorf("deleting PlacementDecision %s: it was not in the read the plan was made from", name)
	}
	rv := cur.ResourceVersion
	if err := a.client.Delete(ctx, cur, client.Preconditions{ResourceVersion: &rv}); err != nil {
		return fmt.Errorf("deleting PlacementDecision %s: %w", name, err)
	}
	delete(a.observed, name)
	return nil
}

func decisions(clusters []string) []fleetv1alpha1.ClusterDecision {
	out := make([]fleetv1alpha1.ClusterDecision, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, fleetv1alpha1.ClusterDecision{ClusterName: c})
	}
	return out
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
