package fleet_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// kstatus (helm --wait, Flux, Argo CD) of a placement: InProgress while its
// decisions surge, Current once settled, Failed while a set is unbound or the
// spec cannot be planned.
func TestKstatusConditions_WhatKstatusReads(t *testing.T) {
	bound := fleet.ClusterSetsCondition(fleet.Selection{Sets: []string{"all"}}, ns, 3)
	unbound := fleet.ClusterSetsCondition(fleet.Selection{NoBinding: true}, ns, 3)
	cases := []struct {
		name       string
		conditions []metav1.Condition
		want       kstatus.Status
	}{
		{"surging", kstatusOf(bound, fleet.SettledCondition(fleet.Plan{Phase: fleet.PhaseSurge}, 3)), kstatus.InProgressStatus},
		{"finalizing", kstatusOf(bound, fleet.SettledCondition(fleet.Plan{Phase: fleet.PhaseFinalize}, 3)), kstatus.InProgressStatus},
		{"writing all", kstatusOf(bound, fleet.SettledCondition(fleet.Plan{Phase: fleet.PhaseWriteAll}, 3)), kstatus.InProgressStatus},
		{"settled", kstatusOf(bound, fleet.SettledCondition(fleet.Plan{Phase: fleet.PhaseSettled}, 3)), kstatus.CurrentStatus},
		{"unbound and settled", kstatusOf(unbound, fleet.SettledCondition(fleet.Plan{Phase: fleet.PhaseSettled}, 3)), kstatus.FailedStatus},
		{"unbound and surging", kstatusOf(unbound, fleet.SettledCondition(fleet.Plan{Phase: fleet.PhaseSurge}, 3)), kstatus.FailedStatus},
		{"an invalid selector", fleet.InvalidSpecConditions(fleetv1alpha1.PlacementReasonInvalidClusterSelector, "bad", 3), kstatus.FailedStatus},
		{"an invalid group strategy", fleet.InvalidSpecConditions(fleetv1alpha1.PlacementReasonInvalidGroupStrategy, "bad", 3), kstatus.FailedStatus},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Generation: 3}}
			pl.Status.ObservedGeneration = 3
			pl.Status.Conditions = c.conditions
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pl)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetAPIVersion(fleetv1alpha1.GroupVersion.String())
			u.SetKind("Placement")
			res, err := kstatus.Compute(u)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.want {
				t.Errorf("kstatus %s (%s), want %s; conditions %+v", res.Status, res.Message, c.want, c.conditions)
			}
		})
	}
}

func kstatusOf(setsBound, settled metav1.Condition) []metav1.Condition {
	return append([]metav1.Condition{setsBound, settled}, fleet.KstatusConditions(setsBound, settled)...)
}
