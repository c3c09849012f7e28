//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// gcProbePCS is the smallest PodCliqueSet: one pod.
const gcProbePCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: gc-probe
spec:
  replicas: 1
  template:
    cliques:
    - name: c
      template:
        spec:
          containers:
          - name: c
            image: lockstep-examples/server:v1
`

// awaitGarbageCollector waits until the kube-controller-manager's garbage
// collector handles Lockstep's kinds. It learns of new resources only at its
// periodic discovery (every 30 s), so on a fresh cluster a PodClique deleted in
// the foreground keeps its pods for up to half a minute; a test that meets
// this sees pods outlive a decision taken long before. The probe: a
// PodCliqueSet with a dependent ConfigMap, deleted in the foreground, is gone
// only once the collector has handled it. It returns how long that took.
func awaitGarbageCollector(ctx context.Context, c client.Client) (time.Duration, error) {
	start := time.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-probe-"}}
	if err := c.Create(ctx, ns); err != nil {
		return 0, err
	}
	defer func() { _ = c.Delete(context.Background(), ns) }()
	pcs := &v1alpha1.PodCliqueSet{}
	if err := yaml.UnmarshalStrict([]byte(gcProbePCS), pcs); err != nil {
		return 0, err
	}
	pcs.Namespace = ns.Name
	if err := c.Create(ctx, pcs); err != nil {
		return 0, fmt.Errorf("creating the probe PodCliqueSet: %w", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns.Name, Name: "gc-probe",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodCliqueSet", Name: pcs.Name, UID: pcs.UID,
			BlockOwnerDeletion: new(true),
		}},
	}}
	if err := c.Create(ctx, dependent); err != nil {
		return 0, fmt.Errorf("creating the probe's dependent: %w", err)
	}
	if err := c.Delete(ctx, pcs, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return 0, err
	}
	err := waitFor(ctx, 2*time.Minute, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(pcs), &v1alpha1.PodCliqueSet{}))
	})
	if err != nil {
		return 0, fmt.Errorf("the garbage collector did not finish a foreground deletion of a PodCliqueSet within 2 minutes")
	}
	return time.Since(start), nil
}
