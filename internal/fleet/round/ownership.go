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

// ownedBy: obj, read in cluster under fw's namespace and name, is fw's
// there (see conflictOf).
func ownedBy(obj *unstructured.Unstructured, fw *fleetv1alpha1.FederatedWorkload, cluster string) bool {
	return ownership(obj, fw, cluster) == ""
}

// conflictOf says why obj, the object member cluster holds under fw's
// namespace and name, is not fw's to write or delete; "" when it is. The
// labels are the only mark of ownership: the hub puts them on every object
// it creates, and an object someone labels so is handed over to the hub. An
// object labelled for another MemberCluster is not this one's, whatever
// workload it names: two MemberClusters then name the same cluster, and each
// writing its own share into one object would break the budget.
func conflictOf(kind string, obj *unstructured.Unstructured, fw *fleetv1alpha1.FederatedWorkload, cluster string) string {
	why := ownership(obj, fw, cluster)
	if why == "" {
		return ""
	}
	return fmt.Sprintf("%s%s %s/%s exists in the member and is not managed by this FederatedWorkload (%s)",
		conflictPrefix, kind, obj.GetNamespace(), obj.GetName(), why)
}

// ownership is why obj is not fw's in cluster, "" when it is.
func ownership(obj *unstructured.Unstructured, fw *fleetv1alpha1.FederatedWorkload, cluster string) string {
	want := ownerValue(fw)
	got, labelled := obj.GetLabels()[fleetv1alpha1.LabelFederatedWorkload]
	switch {
	case !labelled:
		return fmt.Sprintf("label %s=%s is missing", fleetv1alpha1.LabelFederatedWorkload, want)
	case got != want:
		return fmt.Sprintf("label %s is %q, not %q", fleetv1alpha1.LabelFederatedWorkload, got, want)
	}
	// Without the label, the object was written by a hub that did not label
	// its member: it is the workload's, and labelled at the next write.
	if labelledFor, labelled := obj.GetLabels()[fleetv1alpha1.LabelMemberCluster]; labelled && labelledFor != cluster {
		return fmt.Sprintf("label %s is %q, not %q: another MemberCluster names the same cluster",
			fleetv1alpha1.LabelMemberCluster, labelledFor, cluster)
	}
	return ""
}
