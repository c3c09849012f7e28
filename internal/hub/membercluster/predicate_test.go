package membercluster

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func probed(status metav1.ConditionStatus, reason fleetv1alpha1.MemberClusterReason, message string) *fleetv1alpha1.MemberCluster {
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{"region": "eu"}, Generation: 1}}
	mc.Status.KubernetesVersion = "v1.36.3"
	mc.Status.WorkloadKinds = []string{"Deployment"}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: string(fleetv1alpha1.MemberClusterReady),
		Status: status, Reason: string(reason), Message: message, LastTransitionTime: metav1.NewTime(time.Unix(1000, 0))})
	return mc
}

// Only what a placement or a round decides from passes: labels, the Ready
// condition's status (its first appearance too) and the start of a deletion;
// what a probe rewrites around them does not.
func TestDecisionInputsChanged_PassesOnlyWhatSelectionsReadFrom(t *testing.T) {
	ready := probed(metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, "https://m1 answers /readyz and discovery")
	cases := []struct {
		name   string
		change func(mc *fleetv1alpha1.MemberCluster)
		want   bool
	}{
		{"nothing", func(*fleetv1alpha1.MemberCluster) {}, false},
		{"the condition's message", func(mc *fleetv1alpha1.MemberCluster) { mc.Status.Conditions[0].Message = "another host" }, false},
		{"the Kubernetes version", func(mc *fleetv1alpha1.MemberCluster) { mc.Status.KubernetesVersion = "v1.36.4" }, false},
		{"the workload kinds", func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.WorkloadKinds = append(mc.Status.WorkloadKinds, "StatefulSet")
		}, false},
		{"observedGeneration and resourceVersion", func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.ObservedGeneration, mc.ResourceVersion = 2, "99"
		}, false},
		{"an annotation", func(mc *fleetv1alpha1.MemberCluster) { mc.Annotations = map[string]string{"note": "x"} }, false},
		{"Ready turning False", func(mc *fleetv1alpha1.MemberCluster) {
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: string(fleetv1alpha1.MemberClusterReady),
				Status: metav1.ConditionFalse, Reason: string(fleetv1alpha1.MemberClusterReasonUnreachable)})
		}, true},
		{"Ready turning Unknown", func(mc *fleetv1alpha1.MemberCluster) { mc.Status.Conditions[0].Status = metav1.ConditionUnknown }, true},
		{"no Ready condition", func(mc *fleetv1alpha1.MemberCluster) { mc.Status.Conditions = nil }, true},
		{"a label added", func(mc *fleetv1alpha1.MemberCluster) { mc.Labels["tier"] = "gold" }, true},
		{"a label's value", func(mc *fleetv1alpha1.MemberCluster) { mc.Labels["region"] = "us" }, true},
		{"deletion started", func(mc *fleetv1alpha1.MemberCluster) { now := metav1.Now(); mc.DeletionTimestamp = &now }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			after := ready.DeepCopy()
			c.change(after)
			if got := (DecisionInputsChanged{}).Update(event.UpdateEvent{ObjectOld: ready, ObjectNew: after}); got != c.want {
				t.Errorf("update passes: %v, want %v", got, c.want)
			}
		})
	}
	// Never probed to probed not Ready: a round tells "not Ready since a probe"
	// from "not probed yet".
	unprobed := ready.DeepCopy()
	unprobed.Status.Conditions = nil
	notReady := probed(metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonUnreachable, "cannot reach https://m1")
	if !(DecisionInputsChanged{}).Update(event.UpdateEvent{ObjectOld: unprobed, ObjectNew: notReady}) {
		t.Error("the first probe's Ready=False does not pass")
	}
	p := DecisionInputsChanged{}
	if !p.Create(event.CreateEvent{Object: ready}) || !p.Delete(event.DeleteEvent{Object: ready}) {
		t.Error("a creation or a deletion does not pass")
	}
}

// A probe that finds what the status already says writes nothing; one that
// finds a change writes it once, and the condition's lastTransitionTime moves
// only with its status.
func TestWriteStatus_WritesOnlyWhatAProbeChanged(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(&fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}).
		WithStatusSubresource(&fleetv1alpha1.MemberCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				writes++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(100)}
	reachable := Probe{Reason: fleetv1alpha1.MemberClusterReasonReachable, Message: "https://m1 answers /readyz and discovery",
		KubernetesVersion: "v1.36.3", WorkloadKinds: []string{"Deployment"}}
	probe := func(p Probe) *fleetv1alpha1.MemberCluster {
		t.Helper()
		var mc fleetv1alpha1.MemberCluster
		if err := c.Get(ctx, client.ObjectKey{Name: "m1"}, &mc); err != nil {
			t.Fatal(err)
		}
		if err := r.writeStatus(ctx, &mc, p); err != nil {
			t.Fatal(err)
		}
		return &mc
	}
	first := probe(reachable)
	since := meta.FindStatusCondition(first.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)).LastTransitionTime
	for range 3 {
		probe(reachable)
	}
	if writes != 1 {
		t.Fatalf("four identical probes wrote the status %d times, want 1", writes)
	}
	newer := reachable
	newer.KubernetesVersion = "v1.36.4"
	after := probe(newer)
	if writes != 2 {
		t.Fatalf("a new Kubernetes version wrote the status %d times in all, want 2", writes)
	}
	if got := meta.FindStatusCondition(after.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)).LastTransitionTime; !got.Equal(&since) {
		t.Errorf("lastTransitionTime moved from %v to %v with Ready still True", since, got)
	}
}
