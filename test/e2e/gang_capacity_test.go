//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/naming"
)

// gangPCS is one PodCliqueSet replica whose base gang is 3 pods of 4 GPUs:
// 12 GPUs, more than one 8-GPU node has.
const gangPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: trainer
spec:
  replicas: 1
  template:
    cliques:
    - name: worker
      replicas: 3
      template:
        spec:
          containers:
          - name: trainer
            image: lockstep-examples/trainer:v1
            resources: {limits: {nvidia.com/gpu: 4}}
`

// conditionGangScheduled is the PodCliqueSet condition that says whether its
// gangs are placed ("when a gang cannot be placed, the
// PodCliqueSet says so in a condition").
const conditionGangScheduled = "GangScheduled"

// A PodCliqueSet whose gang does not fit stays wholly Pending, with no pod
// placed, says why in its GangScheduled condition (in the scheduler's words),
// and runs once a node is added.
func TestGang_DoesNotFitStaysPendingThenRuns(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, gangPCS))
	ctx := t.Context()
	gangKey := client.ObjectKey{Namespace: s.ns, Name: naming.BaseGang(s.name, 0)}

	// nonePlaced fails the test at once when any pod is bound.
	nonePlaced := func(o *observed) {
		for i := range o.pods {
			if o.pods[i].Spec.NodeName != "" {
				t.Fatalf("pod %s was bound to %s although its gang cannot fit", o.pods[i].Name, o.pods[i].Spec.NodeName)
			}
		}
	}
	s.mustAwait("every pod to exist and the scheduler to find the gang unschedulable", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		nonePlaced(o)
		pg := &schedulingv1alpha2.PodGroup{}
		if err := testCluster.Client.Get(ctx, gangKey, pg); err != nil {
			return false, "", err
		}
		c := apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha2.PodGroupScheduled)
		state := fmt.Sprintf("%d pods; PodGroup %s condition %+v", len(o.pods), pg.Name, c)
		return len(o.pods) == 3 && c != nil && c.Status == metav1.ConditionFalse, state, nil
	})

	// The scheduler has spoken; the operator gets a moment to relay it.
	err := s.await("the PodCliqueSet to say why its gang waits", 15*time.Second, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		nonePlaced(o)
		c := apimeta.FindStatusCondition(o.pcs.Status.Conditions, conditionGangScheduled)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, string(gpuResource)), o.describe(), nil
	})
	if err != nil {
		t.Errorf("want condition %s=False naming the missing %s: %v", conditionGangScheduled, gpuResource, err)
	}
	o, err := s.observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nonePlaced(o)
	if st := &o.pcs.Status; st.ReadyReplicas != 0 || st.AvailableReplicas != 0 {
		t.Errorf("a PodCliqueSet with no pod placed counts replicas ready or available: %s", statusLine(o.pcs))
	}
	t.Logf("while pending: %s", statusLine(o.pcs))

	if err := testCluster.SetNodes(ctx, 2); err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	o = s.awaitLayout("the gang to run on two nodes", time.Minute, layout{"0/worker": "0=v1 1=v1 2=v1"})
	t.Logf("running %s after the second node was added", time.Since(added).Round(100*time.Millisecond))
	nodes := map[string]int{}
	for i := range o.pods {
		nodes[o.pods[i].Spec.NodeName]++
	}
	if len(nodes) != 2 {
		t.Errorf("pods per node %v, want the gang spread over the 2 nodes", nodes)
	}
	if !apimeta.IsStatusConditionTrue(o.pcs.Status.Conditions, "Available") || o.pcs.Status.AvailableReplicas != 1 {
		t.Errorf("status once running: %s", statusLine(o.pcs))
	}
	if c := apimeta.FindStatusCondition(o.pcs.Status.Conditions, conditionGangScheduled); c != nil && c.Status == metav1.ConditionFalse {
		t.Errorf("condition %s still False once the gang runs: %s: %s", c.Type, c.Reason, c.Message)
	}
}
