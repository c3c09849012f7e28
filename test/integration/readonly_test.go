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
	var cached, served corev1.PodList
	if err := env.Cache.List(ctx, &cached, pods.ReadOnly); err != nil {
		return nil, fmt.Errorf("listing the cached pods: %w", err)
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
// it listed read-only: one label set on the cache's own object is found, and
// once taken off again the pod is as served.
func TestPodCache_GuardSeesAReaderChangingACachedPod(t *testing.T) {
	_, ns := newScalingGroup(t, 1, v1alpha1.ChildUpdateStrategy{})
	ctx := context.Background()
	var victim *corev1.Pod
	waitFor(t, "a cached pod of the group as the apiserver serves it", 30*time.Second, func() (bool, string) {
		var cached corev1.PodList
		if err := env.Cache.List(ctx, &cached, client.InNamespace(ns), pods.ReadOnly); err != nil {
			t.Fatal(err)
		}
		if len(cached.Items) == 0 {
			return false, "no pod cached yet"
		}
		changed, err := changedCachedPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		victim = &cached.Items[0]
		var served corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(victim), &served); err != nil {
			t.Fatal(err)
		}
		return served.ResourceVersion == victim.ResourceVersion && !slices.Contains(changed, ns+"/"+victim.Name),
			fmt.Sprintf("pod %s cached at %s, served at %s; changed: %v", victim.Name, victim.ResourceVersion, served.ResourceVersion, changed)
	})

	// The broken reader: it writes into what it listed.
	name := ns + "/" + victim.Name
	victim.Labels["broken-reader"] = "was-here"
	changed, err := changedCachedPods(ctx)
	delete(victim.Labels, "broken-reader")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(changed, name) {
		t.Errorf("the guard did not see pod %s changed in the cache; it reported %v", name, changed)
	}
	if changed, err := changedCachedPods(ctx); err != nil || slices.Contains(changed, name) {
		t.Errorf("with the label taken off again, the guard reports %v (error %v)", changed, err)
	}
}
