package fleetsim

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func podCliqueSet(replicas int64, rev string, updateStrategy map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "lockstep.dev/v1alpha1", "kind": "PodCliqueSet",
		"spec": map[string]any{"replicas": replicas, "updateStrategy": updateStrategy},
	}}
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetAnnotations(map[string]string{fleetv1alpha1.AnnotationTemplateRevision: rev})
	return u
}

// A PodCliqueSet member's controller replaces replicas by its object's
// update strategy: under ReplicaRecreate as many at once as the object's
// maxUnavailable and maxSurge allow (the template's own, should the hub not
// write them), otherwise one at a time and never above spec.replicas.
func TestMember_PodCliqueSetHonoursTheLimitsItsObjectHolds(t *testing.T) {
	cases := []struct {
		name     string
		strategy map[string]any
		// units and unavailable after the first pass on the new revision
		units, unavailable int32
	}{
		{"ReplicaRecreate with its own limits", map[string]any{"type": "ReplicaRecreate",
			"rollingUpdate": map[string]any{"maxUnavailable": int64(2), "maxSurge": "50%"}}, 6, 2},
		{"ReplicaRecreate with the hub's limits", map[string]any{"type": "ReplicaRecreate",
			"rollingUpdate": map[string]any{"maxUnavailable": int64(1), "maxSurge": int64(0), "partition": int64(1)}}, 4, 1},
		{"ReplicaRecreate with the defaults", map[string]any{"type": "ReplicaRecreate"}, 4, 1},
		{"RollingUpdate", map[string]any{"type": "RollingUpdate"}, 4, 1},
		{"the default type", map[string]any{}, 4, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMember("a")
			if err := m.Create(podCliqueSet(4, "r1", c.strategy)); err != nil {
				t.Fatal(err)
			}
			if err := m.Act(); err != nil {
				t.Fatal(err)
			}
			m.Settle()
			m.Report()
			next := podCliqueSet(4, "r2", c.strategy)
			next.SetUID(m.Get().GetUID())
			if err := m.Apply(next); err != nil {
				t.Fatal(err)
			}
			if err := m.Act(); err != nil {
				t.Fatal(err)
			}
			n := m.Count("r2")
			if units := n.Replicas + n.Terminating; units != c.units || 4-n.Available != c.unavailable {
				t.Errorf("%d units (%d live), %d of 4 unavailable; want %d units, %d unavailable", units, n.Replicas, 4-n.Available, c.units, c.unavailable)
			}
		})
	}
}
