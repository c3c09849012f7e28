package federatedworkload

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
)

// observe reads what a round decides from: the Placement and the union of its
// PlacementDecisions, the cluster sets and bindings, the MemberClusters, then
// the member objects round.ReadsOf names, live from each member the hub is
// connected to. It returns the connections it read through.
func (r *Reconciler) observe(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) (round.Input, map[string]cluster.Cluster, error) {
	in := round.Input{Workload: fw, Now: r.now(), RolloutPoll: r.rolloutPoll(), Resync: r.resync()}
	var err error
	if in.Placement, in.Placed, in.Groups, err = r.placement(ctx, fw); err != nil {
		return in, nil, err
	}
	if in.Placement != nil {
		if in.Sets, in.Bindings, in.MemberClusters, err = r.clusterSets(ctx, in.Placement.Namespace); err != nil {
			return in, nil, err
		}
	}
	reads := round.ReadsOf(in)
	read := r.readMembers(ctx, reads)
	in.Members = make(map[string]round.Observed, len(reads.Clusters))
	conns := make(map[string]cluster.Cluster, len(reads.Clusters))
	in.Watched = len(read) > 0
	for _, m := range read {
		switch {
		case m.conn == nil:
			in.Watched = false
		case m.err != nil:
			// Not read is not reachable: the round charges its last grant.
			ctrl.LoggerFrom(ctx).Info("cannot read member object; charging its last grant", "member", m.name, "error", m.err.Error())
			in.Watched = false
		default:
			in.Members[m.name], conns[m.name] = m.obs, m.conn
			in.Watched = in.Watched && r.MemberEvents.Watching(m.conn, reads.Kind)
		}
	}
	return in, conns, nil
}

// observeForDeletion reads the member object in every member of the status
// the hub is connected to (round.FinalizeReads). A read that fails is an
// error: the workload stays until its objects can be told apart.
func (r *Reconciler) observeForDeletion(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) (map[string]round.Observed, map[string]cluster.Cluster, error) {
	reads := round.FinalizeReads(fw)
	seen := make(map[string]round.Observed, len(reads.Clusters))
	conns := make(map[string]cluster.Cluster, len(reads.Clusters))
	for _, m := range r.readMembers(ctx, reads) {
		switch {
		case m.conn == nil:
		case m.err != nil:
			return nil, nil, fmt.Errorf("reading the member object in cluster %s: %w", m.name, m.err)
		default:
			seen[m.name], conns[m.name] = m.obs, m.conn
		}
	}
	return seen, conns, nil
}

// memberRead is one member's read: conn nil when the hub holds no connection.
type memberRead struct {
	name string
	conn cluster.Cluster
	obs  round.Observed
	err  error
}

// readMembers reads every member of reads at once, at most
// MemberConcurrency at a time, each call under its own timeout: a member that
// does not answer costs the round one timeout, not one per member before it.
// The reads come back in the order of reads.Clusters.
func (r *Reconciler) readMembers(ctx context.Context, reads round.Reads) []memberRead {
	out := make([]memberRead, len(reads.Clusters))
	var g errgroup.Group
	g.SetLimit(r.memberConcurrency())
	for i, name := range reads.Clusters {
		out[i].name = name
		conn, ok := r.Members.Get(name, reads.Kind)
		if !ok {
			continue
		}
		out[i].conn = conn
		g.Go(func() error {
			out[i].obs, out[i].err = readMember(ctx, conn, reads)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// placement is the workload's Placement and the sorted union of its
// PlacementDecisions; a nil Placement when it does not exist.
func (r *Reconciler) placement(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) (*fleetv1alpha1.Placement, []string, []stages.Group, error) {
	var pl fleetv1alpha1.Placement
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: fw.Namespace, Name: fw.Spec.PlacementRef.Name}, &pl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, fmt.Errorf("reading Placement %s: %w", fw.Spec.PlacementRef.Name, err)
	}
	var list fleetv1alpha1.PlacementDecisionList
	if err := r.Client.List(ctx, &list, client.InNamespace(fw.Namespace),
		client.MatchingLabels{fleetv1alpha1.LabelPlacement: fw.Spec.PlacementRef.Name}); err != nil {
		return nil, nil, nil, fmt.Errorf("listing PlacementDecisions of %s: %w", fw.Spec.PlacementRef.Name, err)
	}
	return &pl, round.PlacedClusters(list.Items), round.DecisionGroups(list.Items), nil
}

// clusterSets are the MemberClusterSets, the bindings of namespace and the
// MemberClusters: which clusters a placement there may reach.
func (r *Reconciler) clusterSets(ctx context.Context, namespace string) ([]fleetv1alpha1.MemberClusterSet,
	[]fleetv1alpha1.MemberClusterSetBinding, []fleetv1alpha1.MemberCluster, error) {
	var sets fleetv1alpha1.MemberClusterSetList
	if err := r.Client.List(ctx, &sets); err != nil {
		return nil, nil, nil, fmt.Errorf("listing MemberClusterSets: %w", err)
	}
	var bindings fleetv1alpha1.MemberClusterSetBindingList
	if err := r.Client.List(ctx, &bindings, client.InNamespace(namespace)); err != nil {
		return nil, nil, nil, fmt.Errorf("listing MemberClusterSetBindings: %w", err)
	}
	var mcs fleetv1alpha1.MemberClusterList
	if err := r.Client.List(ctx, &mcs); err != nil {
		return nil, nil, nil, fmt.Errorf("listing MemberClusters: %w", err)
	}
	return sets.Items, bindings.Items, mcs.Items, nil
}

// readMember reads the member object, past any cache, and a Deployment's
// ReplicaSets. An object that does not exist is a read that found none.
func readMember(ctx context.Context, conn cluster.Cluster, reads round.Reads) (round.Observed, error) {
	obj, err := readObject(ctx, conn, reads)
	switch {
	case apierrors.IsNotFound(err):
		return round.Observed{Read: true}, nil
	case err != nil:
		return round.Observed{}, err
	}
	obs := round.Observed{Read: true, Object: obj}
	if reads.ReplicaSets {
		obs.ReplicaSets, err = readReplicaSets(ctx, conn, obj)
		if err != nil {
			// round.Observed.ReplicaSetsRead false: the member keeps its grant.
			ctrl.LoggerFrom(ctx).Info("cannot read the member's ReplicaSets; keeping its grant", "error", err.Error())
		}
		obs.ReplicaSetsRead = err == nil
	}
	return obs, nil
}

func readObject(ctx context.Context, conn cluster.Cluster, reads round.Reads) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(reads.Kind)
	if err := conn.GetAPIReader().Get(ctx, reads.Key, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// readReplicaSets lists the ReplicaSets matching a Deployment's selector.
func readReplicaSets(ctx context.Context, conn cluster.Cluster, dep *unstructured.Unstructured) ([]unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSetList"})
	if err := conn.GetAPIReader().List(ctx, list, client.InNamespace(dep.GetNamespace()), client.MatchingLabels(sel)); err != nil {
		return nil, err
	}
	return list.Items, nil
}
