package testenv

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// DefaultClusterSet is the MemberClusterSet that selects every member, as
// `make fleet-up` creates it; tests bind it where their Placements live.
const DefaultClusterSet = "default"

// EnsureClusterSet creates MemberClusterSet name with selector (nil: every
// MemberCluster) unless one of that name exists; an existing one is left as
// it is.
func EnsureClusterSet(ctx context.Context, c client.Client, name string, selector *metav1.LabelSelector) error {
	set := &fleetv1alpha1.MemberClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       fleetv1alpha1.MemberClusterSetSpec{ClusterSelector: selector},
	}
	if err := c.Create(ctx, set); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating MemberClusterSet %s: %w", name, err)
	}
	return nil
}

// BindClusterSet binds MemberClusterSet set to namespace (the set need not
// exist). An existing binding is left as it is.
func BindClusterSet(ctx context.Context, c client.Client, namespace, set string) error {
	b := &fleetv1alpha1.MemberClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec:       fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: set},
	}
	if err := c.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding MemberClusterSet %s to namespace %s: %w", set, namespace, err)
	}
	return nil
}

// BindDefaultClusterSet makes sure DefaultClusterSet exists and binds it to
// namespace, so that the namespace's Placements may select every member, as
// they could before cluster sets.
func BindDefaultClusterSet(ctx context.Context, c client.Client, namespace string) error {
	if err := EnsureClusterSet(ctx, c, DefaultClusterSet, nil); err != nil {
		return err
	}
	return BindClusterSet(ctx, c, namespace, DefaultClusterSet)
}
