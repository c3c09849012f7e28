package fleetsim

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-dev/lockstep/internal/fleet/deploysim"
)

// A Deployment member is played by deploysim: the Deployment controller and
// the ReplicaSet controller of kube-controller-manager, over ReplicaSets and
// their pods. Its object's spec reaches the controller at Act; what the hub
// reads back (the Deployment's status, its ReplicaSets) is what those
// controllers wrote.

// deploymentSpec is what the Deployment controller reads of obj.
func deploymentSpec(obj *unstructured.Unstructured) deploysim.Spec {
	paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused")
	return deploysim.Spec{
		Replicas:       int32(intField(obj, "spec", "replicas")),
		Template:       revisionOf(obj),
		Paused:         paused,
		MaxUnavailable: intOrString(obj, "spec", "strategy", "rollingUpdate", "maxUnavailable"),
		MaxSurge:       intOrString(obj, "spec", "strategy", "rollingUpdate", "maxSurge"),
	}
}

// maxControllerPasses bounds the passes of a Deployment's controllers before
// time passes; they come to rest in a few.
const maxControllerPasses = 100

// actDeployment runs the Deployment's controllers on its object as it is now,
// pass after pass until a pass changes nothing: all they do before a pod
// starts or goes (they run in moments, pods take a start-up time).
func (m *Member) actDeployment() {
	m.dep.SetSpec(deploymentSpec(m.obj))
	for range maxControllerPasses {
		synced := m.dep.Sync()
		if !m.dep.SyncReplicaSets() && !synced {
			break
		}
	}
	m.synced = m.obj.GetGeneration()
}

// settleDeployment lets a start-up time pass: pods start, terminating ones
// go, the ReplicaSets report them, and the Deployment's controllers, seeing
// that, act at once (the next step of a rollout does not wait for the hub).
// A deleted Deployment is gone with its last pod.
func (m *Member) settleDeployment() {
	m.dep.StartPods()
	m.dep.RemoveTerminating()
	m.dep.ReportReplicaSets()
	if m.obj == nil {
		m.dep = nil
		return
	}
	m.actDeployment()
}

// deploymentStatus is the status the Deployment controller wrote last, at the
// generation it synced.
func (m *Member) deploymentStatus() map[string]any {
	s := m.dep.Status
	return map[string]any{
		"observedGeneration": m.synced,
		"replicas":           int64(s.Replicas), "updatedReplicas": int64(s.Updated), "readyReplicas": int64(s.Available),
		"availableReplicas": int64(s.Available), "terminatingReplicas": int64(s.Terminating),
	}
}

// deploymentReplicaSets are the Deployment's ReplicaSets as a list returns
// them, owned by its object.
func (m *Member) deploymentReplicaSets() []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, r := range m.dep.ReplicaSets {
		rs := unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"spec": map[string]any{"replicas": int64(r.Replicas)},
			"status": map[string]any{"observedGeneration": r.Status.ObservedGeneration, "replicas": int64(r.Status.Replicas),
				"availableReplicas": int64(r.Status.AvailableReplicas), "terminatingReplicas": int64(r.Status.Terminating)},
		}}
		rs.SetNamespace(m.obj.GetNamespace())
		rs.SetName(m.obj.GetName() + "-" + r.Template)
		rs.SetGeneration(r.Generation)
		rs.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: m.obj.GetName(), UID: m.obj.GetUID()}})
		rs.SetAnnotations(map[string]string{deploymentRevision: strconv.FormatInt(r.Revision, 10)})
		out = append(out, rs)
	}
	return out
}

// deploymentCounts counts the Deployment's pods, Updated those of template
// rev.
func (m *Member) deploymentCounts(rev string) Counts {
	p := m.dep.Pods()
	c := Counts{Replicas: p.Active(), Terminating: p.Terminating, Available: p.Available}
	if rs := m.dep.Of(rev); rs != nil {
		c.Updated, c.UpdatedAvailable = rs.Pods.Active(), rs.Pods.Available
	}
	return c
}
