package round

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// conflictPrefix starts status.clusters[].waiting of a member whose object
// is not the workload's.
const conflictPrefix = "Conflict: "

// ownerValue is the value of the label fleet.lockstep.dev/federatedworkload
// on the member objects of fw. Namespaces hold no dots, so it names one
// workload.
func ownerValue(fw *fleetv1alpha1.FederatedWorkload) string {
	return fw.Namespace + "." + fw.Name
}

// ownedBy: obj, read under fw's namespace and name, is fw's (see conflictOf).
func ownedBy(obj *unstructured.Unstructured, fw *fleetv1alpha1.FederatedWorkload) bool {
	got, labelled := obj.GetLabels()[fleetv1alpha1.LabelFederatedWorkload]
	return labelled && got == ownerValue(fw)
}

// conflictOf says why obj, the object a member holds under fw's namespace
// and name, is not fw's to write or delete; "" when it is. The label is the
// only mark of ownership: the hub puts it on every object it creates, and an
// object someone labels so is handed over to the hub.
func conflictOf(kind string, obj *unstructured.Unstructured, fw *fleetv1alpha1.FederatedWorkload) string {
	if ownedBy(obj, fw) {
		return ""
	}
	want := ownerValue(fw)
	got, labelled := obj.GetLabels()[fleetv1alpha1.LabelFederatedWorkload]
	why := fmt.Sprintf("label %s=%s is missing", fleetv1alpha1.LabelFederatedWorkload, want)
	if labelled {
		why = fmt.Sprintf("label %s is %q, not %q", fleetv1alpha1.LabelFederatedWorkload, got, want)
	}
	return fmt.Sprintf("%s%s %s/%s exists in the member and is not managed by this FederatedWorkload (%s)",
		conflictPrefix, kind, obj.GetNamespace(), obj.GetName(), why)
}
