package round

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// holdShares sets each planned member's Desired to the replicas the plan
// gives it: what its object holds from this round on.
func holdShares(ms []*observed, plan align.Plan) {
	plans := make(map[string]align.MemberPlan, len(plan.Members))
	for _, mp := range plan.Members {
		plans[mp.Name] = mp
	}
	for _, m := range ms {
		if mp, ok := plans[m.Name]; ok {
			m.Desired = mp.Replicas
		}
	}
}

// writesOf is what the round writes to each member it reached: its object
// with its share and grant, and the record of both (member.Record), created
// when the member has none; or, for a cluster that left the placement and
// whose units are gone, the delete of its object. Members not reached, gone
// or in conflict get nothing. unwritable names the members whose object the
// template could not be built into.
func writesOf(fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template, ms []*observed, plan align.Plan) (writes []Write, unwritable []string) {
	grants := make(map[string]align.Grant, len(plan.Members))
	for _, mp := range plan.Members {
		grants[mp.Name] = mp.Grant
	}
	for _, m := range ms {
		if !m.reached || m.gone || m.Conflict != "" {
			continue
		}
		if m.Leaving && m.Desired == 0 && m.Reach == align.Current && m.Status.Replicas+m.Status.Terminating == 0 {
			writes = append(writes, deleteOf(m.Name, tmpl.Object.GroupVersionKind(), m.held))
			continue
		}
		held := m.held
		if held == nil {
			held = m.holdFrom
		}
		obj, err := member.Build(member.Object{Template: tmpl, Namespace: fw.Namespace, Name: fw.Name, Cluster: m.Name, Replicas: m.Desired, Grant: grants[m.Name], Held: held})
		if err != nil {
			unwritable = append(unwritable, fmt.Sprintf("cluster %s: building %s %s/%s: %v", m.Name, tmpl.Kind, fw.Namespace, fw.Name, err))
			continue
		}
		// The decision travels with the object, in the same request: the
		// next round reads it back from there (see memory).
		member.SetRecordOver(obj, m.held, member.Record{Revision: tmpl.Revision, Share: m.Desired, Grant: grants[m.Name], StillActing: m.StillActing})
		member.SetApplied(obj)
		if m.held == nil {
			writes = append(writes, Write{Cluster: m.Name, Op: Create, Object: obj})
			continue
		}
		if member.Unchanged(m.held, obj) {
			continue // the member holds all of it already: nothing to send
		}
		// The object read as the workload's, by its UID (see Apply). Forcing
		// ownership then takes back the hub's fields within the workload's own
		// object only. One window is left: the same object relabelled between
		// the read and the apply gets the label back (the next read sees it as
		// the workload's).
		obj.SetUID(m.held.GetUID())
		writes = append(writes, Write{Cluster: m.Name, Op: Apply, Object: obj})
	}
	return writes, unwritable
}

// deleteOf deletes held, a member object read as the workload's, only if it
// is still that object unchanged.
func deleteOf(cluster string, gvk schema.GroupVersionKind, held *unstructured.Unstructured) Write {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(held.GetNamespace())
	obj.SetName(held.GetName())
	return Write{Cluster: cluster, Op: Delete, Object: obj, UID: held.GetUID(), ResourceVersion: held.GetResourceVersion()}
}
