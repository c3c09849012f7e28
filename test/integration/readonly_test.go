package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
)

// changedCachedPods names the pods of the operator's cache that are not what
// the apiserver serves at the same resourceVersion, trimmed as the cache
// trims: a reader that listed the cache's own objects (pods.ReadOnly) and
// changed one. Pods whose versions differ are skipped (the cache trails the
// apiserver), so it can be called while controllers run. TestMain calls it
// after every test, so each reader the tests drive is checked.
func changedCachedPods(ctx context.Context) ([]string, error) {
	return changedPods(ctx, nil)
}

// changedPods is changedCachedPods with alter applied to the list of the
// cache's own objects before the comparison: what a broken reader does to
// them, without writing into the shared cache (the race detector rightly
// reports any such write against the informers' readers).
func changedPods(ctx context.Context, alter func([]corev1.Pod)) ([]string, error) {
	var cached, served corev1.PodList
	if err := env.Cache.List(ctx, &cached, pods.ReadOnly); err != nil {
		return nil, fmt.Errorf("listing the cached pods: %w", err)
	}
	if alter != nil {
		alter(cached.Items)
	}
	if err := env.Client.List(ctx, &served); err != nil {
		return nil, fmt.Errorf("listing the pods: %w", err)
	}
	byUID := make(map[types.UID]*corev1.Pod, len(served.Items))
	for i := range served.Items {
		byUID[served.Items[i].UID] = &served.Items[i]
	}
	var changed []string
	for i := range cached.Items {
		c := &cached.Items[i]
		s, ok := byUID[c.UID]
		if !ok || s.ResourceVersion != c.ResourceVersion {
			continue
		}
		trimmed, err := pods.TrimForCache(s.DeepCopy())
		if err != nil {
			return nil, err
		}
		want, got := trimmed.(*corev1.Pod), c.DeepCopy()
		want.TypeMeta, got.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		if !equality.Semantic.DeepEqual(want, got) {
			changed = append(changed, c.Namespace+"/"+c.Name)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// The guard TestMain runs after the tests sees a reader that changed a pod
// it listed read-only: one label set on a cached pod is found, and the pod
// as cached is not reported. The broken reader changes a copy in the guard's
// own list of the cache's objects: a write into the shared object itself is
// a data race with the informers that read it, which -race reports first.
func TestPodCache_GuardSeesAReaderChangingACachedPod(t *testing.T) {
	_, ns := newScalingGroup(t, 1, v1alpha1.ChildUpdateStrategy{})
	ctx := context.Background()
	var victim string
	waitFor(t, "a cached pod of the group as the apiserver serves it", 30*time.Second, func() (bool, string) {
		var cached corev1.PodList
		if err := env.Cache.List(ctx, &cached, client.InNamespace(ns), pods.ReadOnly); err != nil {
			t.Fatal(err)
		}
		if len(cached.Items) == 0 {
			return false, "no pod cached yet"
		}
		p := &cached.Items[0]
		var served corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &served); err != nil {
			t.Fatal(err)
		}
		victim = ns + "/" + p.Name
		return served.ResourceVersion == p.ResourceVersion, fmt.Sprintf("pod %s cached at %s, served at %s", p.Name, p.ResourceVersion, served.ResourceVersion)
	})

	broken := func(items []corev1.Pod) {
		for i := range items {
			if items[i].Namespace+"/"+items[i].Name == victim {
				p := items[i].DeepCopy()
				p.Labels["broken-reader"] = "was-here"
				items[i] = *p
			}
		}
	}
	var changed []string
	waitFor(t, "the guard to name the changed pod", 30*time.Second, func() (bool, string) {
		var err error
		if changed, err = changedPods(ctx, broken); err != nil {
			t.Fatal(err)
		}
		// a pod that moved on since is skipped: try again at its next version
		return slices.Contains(changed, victim), fmt.Sprintf("the guard reported %v", changed)
	})
	if changed, err := changedCachedPods(ctx); err != nil || slices.Contains(changed, victim) {
		t.Errorf("unchanged, the guard reports %v (error %v)", changed, err)
	}
}
