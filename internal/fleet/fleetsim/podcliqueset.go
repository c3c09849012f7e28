package fleetsim

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/limit"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// podCliqueSetPolicy is how a PodCliqueSet member's controller replaces its
// replicas (the units here), read from its object as that controller reads
// it, on top of p (replicas, revisions, orders). Above the partition:
//
//   - ReplicaRecreate: whole replicas are deleted and recreated, as many at
//     once as the object's spec.updateStrategy.rollingUpdate.maxUnavailable
//     allows, with up to its maxSurge replicas above spec.replicas (defaults
//     1 and 0, percentages of spec.replicas), as rollout.PlanSet's replica
//     level does. Whatever limits the object holds are honoured: only the hub
//     writing them keeps the member within its grant.
//   - RollingUpdate (any other type): one replica at a time, played as
//     taken down and brought back on the new revision, never above
//     spec.replicas.
func podCliqueSetPolicy(obj *unstructured.Unstructured, p rollout.Policy) rollout.Policy {
	p.Partition = int32(intField(obj, "spec", "updateStrategy", "rollingUpdate", "partition"))
	ty, _, _ := unstructured.NestedString(obj.Object, "spec", "updateStrategy", "type")
	if v1alpha1.UpdateStrategyType(ty) != v1alpha1.ReplicaRecreateStrategyType {
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(1), intstr.FromInt32(0)
		return p
	}
	p.MaxUnavailable, p.MaxSurge = limit.Defaulted(
		optionalIntOrString(obj, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"),
		optionalIntOrString(obj, "spec", "updateStrategy", "rollingUpdate", "maxSurge"))
	return p
}

// optionalIntOrString reads an int-or-percent field, nil when it is unset.
func optionalIntOrString(obj *unstructured.Unstructured, path ...string) *intstr.IntOrString {
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if !found {
		return nil
	}
	var out intstr.IntOrString
	switch x := v.(type) {
	case string:
		out = intstr.FromString(x)
	case int64:
		out = intstr.FromInt32(int32(x))
	case float64:
		out = intstr.FromInt32(int32(x))
	default:
		return nil
	}
	return &out
}
