package round

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// FinalizeReads is what the last round of a workload being deleted reads:
// its member object in every cluster of its status, reachable or not.
// Nothing when the template does not parse (there is nothing to look for).
func FinalizeReads(fw *fleetv1alpha1.FederatedWorkload) Reads {
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		return Reads{}
	}
	r := Reads{Kind: tmpl.Object.GroupVersionKind(), Key: types.NamespacedName{Namespace: fw.Namespace, Name: fw.Name}}
	for _, e := range fw.Status.Clusters {
		r.Clusters = append(r.Clusters, e.Name)
	}
	return r
}

// Finalize is the last round of a workload being deleted: the deletes of its
// member objects in the members that were read, and Events naming the
// members that could not be (their objects stay behind) and the objects
// under its name that are not its own (they stay too). Once the writes are
// done the workload may go.
func Finalize(fw *fleetv1alpha1.FederatedWorkload, members map[string]Observed) ([]Write, []Event) {
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		return nil, nil
	}
	var writes []Write
	var left, kept []string
	for _, e := range fw.Status.Clusters {
		obs := members[e.Name]
		switch {
		case !obs.Read:
			left = append(left, e.Name)
		case obs.Object == nil:
		case conflictOf(string(tmpl.Kind), obs.Object, fw, e.Name) != "":
			kept = append(kept, e.Name)
		default:
			writes = append(writes, deleteOf(e.Name, tmpl.Object.GroupVersionKind(), obs.Object))
		}
	}
	var events []Event
	if len(left) > 0 {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: EventMemberObjectsLeft, Action: "Delete",
			Message: fmt.Sprintf("no connection to %s: their member objects were not deleted", strings.Join(left, ", "))})
	}
	if len(kept) > 0 {
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: EventForeignMemberObjectsKept, Action: "Delete",
			Message: fmt.Sprintf("%s %s/%s in %s is not this workload's there (labels %s and %s): left in place", tmpl.Kind, fw.Namespace, fw.Name,
				strings.Join(kept, ", "), fleetv1alpha1.LabelFederatedWorkload, fleetv1alpha1.LabelMemberCluster)})
	}
	return writes, events
}
