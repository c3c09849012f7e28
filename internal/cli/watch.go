package cli

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/view"
)

// watcher keeps an object, what it owns and (for a PodCliqueSet) its Events
// in memory from watches, and says when any of them changes.
type watcher struct {
	cache   cache.Cache
	changed chan struct{}
	ns      string
	name    string
}

// watch starts informers for the PodCliqueSet name and its objects (and its
// Events when events is set) and returns once they are synced.
func (s *session) watch(ctx context.Context, name string, events bool) (*watcher, error) {
	owned := labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodCliqueSet: name})
	byObject := map[client.Object]cache.ByObject{
		&v1alpha1.PodCliqueSet{}:          {Field: fields.OneTermEqualSelector("metadata.name", name)},
		&v1alpha1.PodClique{}:             {Label: owned},
		&v1alpha1.PodCliqueScalingGroup{}: {Label: owned},
		&corev1.Pod{}:                     {Label: owned},
		&appsv1.ControllerRevision{}:      {Label: owned},
	}
	if events {
		byObject[&eventsv1.Event{}] = cache.ByObject{Field: fields.OneTermEqualSelector("regarding.name", name)}
	}
	return s.startWatch(ctx, kindPodCliqueSet, name, byObject)
}

// watchFederated watches the FederatedWorkload name: its status holds all
// `get` and `status` show.
func (s *session) watchFederated(ctx context.Context, name string) (*watcher, error) {
	return s.startWatch(ctx, kindFederatedWorkload, name, map[client.Object]cache.ByObject{
		&fleetv1alpha1.FederatedWorkload{}: {Field: fields.OneTermEqualSelector("metadata.name", name)},
	})
}

// watchPlacement watches the Placement name, its PlacementDecisions and, when
// clusters is set, the MemberClusters.
func (s *session) watchPlacement(ctx context.Context, name string, clusters bool) (*watcher, error) {
	byObject := map[client.Object]cache.ByObject{
		&fleetv1alpha1.Placement{}:         {Field: fields.OneTermEqualSelector("metadata.name", name)},
		&fleetv1alpha1.PlacementDecision{}: {Label: labels.SelectorFromSet(labels.Set{fleetv1alpha1.LabelPlacement: name})},
	}
	if clusters {
		byObject[&fleetv1alpha1.MemberCluster{}] = cache.ByObject{}
	}
	return s.startWatch(ctx, kindPlacement, name, byObject)
}

// startWatch starts an informer for each object of byObject and returns once
// they are synced.
func (s *session) startWatch(ctx context.Context, k kind, name string, byObject map[client.Object]cache.ByObject) (*watcher, error) {
	c, err := cache.New(s.config, cache.Options{
		Scheme:            s.scheme,
		DefaultNamespaces: map[string]cache.Config{s.ns: {}},
		ByObject:          byObject,
	})
	if err != nil {
		return nil, err
	}
	w := &watcher{cache: c, changed: make(chan struct{}, 1), ns: s.ns, name: name}
	signal := func() {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}
	for obj := range byObject {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("watching %s %s/%s: %w", k, s.ns, name, context.Cause(ctx))
	}
	signal()
	return w, nil
}

// get reads the watched object into obj; false when it does not exist.
func (w *watcher) get(ctx context.Context, obj client.Object) (bool, error) {
	if err := w.cache.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}

// federated is the watched FederatedWorkload, nil when it does not exist.
func (w *watcher) federated(ctx context.Context) (*fleetv1alpha1.FederatedWorkload, error) {
	fw := &fleetv1alpha1.FederatedWorkload{}
	if ok, err := w.get(ctx, fw); !ok {
		return nil, err
	}
	return fw, nil
}

// pcs is the watched PodCliqueSet, nil when it does not exist.
func (w *watcher) pcs(ctx context.Context) (*v1alpha1.PodCliqueSet, error) {
	pcs := &v1alpha1.PodCliqueSet{}
	if err := w.cache.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name}, pcs); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return pcs, nil
}

// load reads a snapshot of the PodCliqueSet name and what it owns.
func load(ctx context.Context, r client.Reader, ns, name string, pcs *v1alpha1.PodCliqueSet) (*view.Snapshot, error) {
	s := &view.Snapshot{PCS: pcs}
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: name}}
	var cliques v1alpha1.PodCliqueList
	var groups v1alpha1.PodCliqueScalingGroupList
	var pods corev1.PodList
	var revs appsv1.ControllerRevisionList
	for _, l := range []client.ObjectList{&cliques, &groups, &pods, &revs} {
		if err := r.List(ctx, l, opts...); err != nil {
			return nil, fmt.Errorf("listing the objects of PodCliqueSet %s/%s: %w", ns, name, err)
		}
	}
	s.Cliques, s.Groups, s.Pods, s.Revisions = cliques.Items, groups.Items, pods.Items, revs.Items
	return s, nil
}

// loadPlacement reads the Placement name, its PlacementDecisions and, when
// clusters is set, the MemberClusters; nil when the Placement does not exist.
func loadPlacement(ctx context.Context, r client.Reader, ns, name string, clusters bool) (*view.PlacementSnapshot, error) {
	pl := &fleetv1alpha1.Placement{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pl); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	s := &view.PlacementSnapshot{Placement: pl, ClustersKnown: clusters}
	var decisions fleetv1alpha1.PlacementDecisionList
	if err := r.List(ctx, &decisions, client.InNamespace(ns), client.MatchingLabels{fleetv1alpha1.LabelPlacement: name}); err != nil {
		return nil, fmt.Errorf("listing the PlacementDecisions of Placement %s/%s: %w", ns, name, err)
	}
	s.Decisions = decisions.Items
	if clusters {
		var mcs fleetv1alpha1.MemberClusterList
		if err := r.List(ctx, &mcs); err != nil {
			return nil, fmt.Errorf("listing MemberClusters: %w", err)
		}
		s.Clusters = mcs.Items
	}
	return s, nil
}
