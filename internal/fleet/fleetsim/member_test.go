package fleetsim

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func deployment(replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{"replicas": replicas,
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": int64(1), "maxSurge": int64(1)}}},
	}}
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetAnnotations(map[string]string{fleetv1alpha1.AnnotationTemplateRevision: "r1"})
	return u
}

// A member takes the hub's writes by the apiserver's rules: a create fails
// on a taken name, an apply needs the object's UID, a delete its UID and
// resourceVersion; each write that changes the spec is a new generation.
func TestMember_TakesWritesByTheApiserversRules(t *testing.T) {
	m := NewMember("a")
	if err := m.Apply(deployment(2)); err == nil {
		t.Error("an apply created an object")
	}
	if err := m.Create(deployment(2)); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(deployment(2)); err == nil {
		t.Error("a second create succeeded")
	}
	held := m.Get()
	other := deployment(3)
	other.SetUID("someone-elses")
	if err := m.Apply(other); err == nil {
		t.Error("an apply with another UID succeeded")
	}
	mine := deployment(3)
	mine.SetUID(held.GetUID())
	if err := m.Apply(mine); err != nil || m.Get().GetGeneration() != 2 {
		t.Fatalf("apply: %v, generation %d", err, m.Get().GetGeneration())
	}
	if err := m.Delete(held, held.GetUID(), held.GetResourceVersion()); err == nil {
		t.Error("a delete at an old resourceVersion succeeded")
	}
	now := m.Get()
	if err := m.Delete(now, now.GetUID(), now.GetResourceVersion()); err != nil || m.Get() != nil {
		t.Fatalf("delete: %v, object %v", err, m.Get())
	}
	if len(m.Received) != 7 {
		t.Errorf("%d requests received, want 7", len(m.Received))
	}
}

// Its controller creates the units its object asks for, reports them, and,
// as a Deployment, owns one ReplicaSet per revision.
func TestMember_ControllerReportsWhatItRuns(t *testing.T) {
	m := NewMember("a")
	if err := m.Create(deployment(3)); err != nil {
		t.Fatal(err)
	}
	if err := m.Act(); err != nil {
		t.Fatal(err)
	}
	m.Settle()
	m.Report()
	st, _, _ := unstructured.NestedMap(m.Get().Object, "status")
	if st["replicas"] != int64(3) || st["availableReplicas"] != int64(3) || st["updatedReplicas"] != int64(3) || st["observedGeneration"] != int64(1) {
		t.Errorf("status %v", st)
	}
	rss := m.ReplicaSets()
	if len(rss) != 1 || rss[0].GetOwnerReferences()[0].UID != m.Get().GetUID() ||
		rss[0].GetAnnotations()[deploymentRevision] != m.Get().GetAnnotations()[deploymentRevision] {
		t.Errorf("ReplicaSets %v", rss)
	}
}
