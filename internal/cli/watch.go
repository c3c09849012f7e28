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

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/view"
)

// watcher keeps a PodCliqueSet, what it owns and its Events in memory from
// watches, and says when any of them changes.
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
		return nil, fmt.Errorf("watching PodCliqueSet %s/%s: %w", s.ns, name, context.Cause(ctx))
	}
	signal()
	return w, nil
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
