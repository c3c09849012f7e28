// Package member maps between a FederatedWorkload and the objects the hub
// writes in member clusters: which kinds a template may be, which of its fields
// the hub owns, how a grant of the fleet planner (internal/fleet/align) becomes
// those fields, and how a member object's spec and status read back as the
// planner's input. It is pure: objects in, objects out.
package member

import (
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// Kind is a kind a member object may be.
type Kind string

const (
	Deployment   Kind = "Deployment"
	StatefulSet  Kind = "StatefulSet"
	PodCliqueSet Kind = "PodCliqueSet"
)

// Kinds are the supported kinds by apiVersion and kind.
var kinds = map[[2]string]Kind{
	{"apps/v1", "Deployment"}:                 Deployment,
	{"apps/v1", "StatefulSet"}:                StatefulSet,
	{"lockstep.dev/v1alpha1", "PodCliqueSet"}: PodCliqueSet,
}

// KindOf is the member kind of apiVersion and kind, false when unsupported.
func KindOf(apiVersion, kind string) (Kind, bool) {
	k, ok := kinds[[2]string{apiVersion, kind}]
	return k, ok
}

// Align is how the planner steers members of this kind.
func (k Kind) Align() align.Kind {
	if k == Deployment {
		return align.Deployment
	}
	return align.Partitioned
}

// Unit names what one replica of the kind is, for messages.
func (k Kind) Unit() string {
	if k == PodCliqueSet {
		return "replica"
	}
	return "pod"
}

// StrategyOf is the planner's global strategy of a FederatedWorkload, with the
// API's defaults filled in.
func StrategyOf(fw *fleetv1alpha1.FederatedWorkload) align.Strategy {
	rs := fw.Spec.RolloutStrategy
	mu, ms := limit.Defaulted(rs.MaxUnavailable, rs.MaxSurge)
	return align.Strategy{Replicas: fw.Spec.Replicas, MaxUnavailable: mu, MaxSurge: ms, Partition: rs.Partition, Paused: rs.Paused}
}

// Template is a parsed FederatedWorkload template.
type Template struct {
	Kind Kind
	// Object is the template as written by the user.
	Object *unstructured.Unstructured
	// Revision is the hash of its pod template (spec.template): what member
	// objects carry in the template-revision annotation.
	Revision string
}

// ParseTemplate reads a template's JSON (or YAML-converted JSON) form.
func ParseTemplate(raw []byte) (*Template, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("the template is empty")
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("the template is not a JSON object: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	k, ok := KindOf(u.GetAPIVersion(), u.GetKind())
	if !ok {
		return nil, fmt.Errorf("unsupported kind %s %s: must be apps/v1 Deployment, apps/v1 StatefulSet or lockstep.dev/v1alpha1 PodCliqueSet", u.GetAPIVersion(), u.GetKind())
	}
	podTemplate, _, err := unstructured.NestedFieldNoCopy(m, "spec", "template")
	if err != nil {
		return nil, fmt.Errorf("reading spec.template: %w", err)
	}
	rev, err := revision.Of(podTemplate)
	if err != nil {
		return nil, fmt.Errorf("hashing spec.template: %w", err)
	}
	return &Template{Kind: k, Object: u, Revision: rev}, nil
}

// Recreates reports whether t is a PodCliqueSet template of type
// ReplicaRecreate: its members delete and recreate whole replicas, as many at
// once as the object's maxUnavailable and maxSurge allow. (Under RollingUpdate
// a PodCliqueSet updates one replica at a time and its CRD refuses those
// limits.)
func (t *Template) Recreates() bool {
	if t.Kind != PodCliqueSet {
		return false
	}
	ty, _, _ := unstructured.NestedString(t.Object.Object, "spec", "updateStrategy", "type")
	return v1alpha1.UpdateStrategyType(ty) == v1alpha1.ReplicaRecreateStrategyType
}

// OwnedRolloutFields are the paths (from the object's root) of the rollout
// fields the hub writes to members of kind k; a template must leave them out.
// They are every field by which a member could go beyond its grant. A
// PodCliqueSet's maxUnavailable and maxSurge are written to ReplicaRecreate
// members only (see RolloutFields); under any other type its CRD refuses
// them, so a template leaves them out under either type.
func OwnedRolloutFields(k Kind) [][]string {
	switch k {
	case Deployment:
		return [][]string{
			{"spec", "paused"},
			{"spec", "strategy", "rollingUpdate", "maxUnavailable"},
			{"spec", "strategy", "rollingUpdate", "maxSurge"},
		}
	case StatefulSet:
		return [][]string{{"spec", "updateStrategy", "rollingUpdate", "partition"}}
	case PodCliqueSet:
		return [][]string{
			{"spec", "paused"},
			{"spec", "updateStrategy", "rollingUpdate", "partition"},
			{"spec", "updateStrategy", "rollingUpdate", "maxUnavailable"},
			{"spec", "updateStrategy", "rollingUpdate", "maxSurge"},
		}
	}
	return nil
}

// Object is what the hub writes for one member.
type Object struct {
	Template *Template
	// Namespace and Name are the FederatedWorkload's.
	Namespace, Name string
	// Cluster is the MemberCluster the object is for.
	Cluster  string
	Replicas int32
	Grant    align.Grant
	// Held is the member object as it stands, nil when it does not exist yet.
	// A Deployment member that is not started keeps the pod template (and
	// template revision) it holds.
	Held *unstructured.Unstructured
}

// Build is the object to apply: the template with the hub's identity, share
// and grant.
func Build(o Object) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": o.Template.Object.GetAPIVersion(),
		"kind":       o.Template.Object.GetKind(),
	}}
	spec, _, err := unstructured.NestedMap(o.Template.Object.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("reading the template's spec: %w", err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	u.Object["spec"] = spec
	u.SetNamespace(o.Namespace)
	u.SetName(o.Name)
	lbls := maps.Clone(o.Template.Object.GetLabels())
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[fleetv1alpha1.LabelFederatedWorkload] = o.Namespace + "." + o.Name
	lbls[fleetv1alpha1.LabelMemberCluster] = o.Cluster
	u.SetLabels(lbls)
	ann := maps.Clone(o.Template.Object.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	ann[fleetv1alpha1.AnnotationTemplateRevision] = o.Template.Revision
	if o.Template.Kind == Deployment && !o.Grant.Started && o.Held != nil {
		held, found, err := unstructured.NestedFieldCopy(o.Held.Object, "spec", "template")
		if err != nil {
			return nil, fmt.Errorf("reading the held pod template: %w", err)
		}
		if found {
			spec["template"] = held
			ann[fleetv1alpha1.AnnotationTemplateRevision] = o.Held.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision]
		}
	}
	u.SetAnnotations(ann)
	spec["replicas"] = int64(o.Replicas)
	for _, f := range RolloutFields(o.Template, o.Grant) {
		if err := unstructured.SetNestedField(u.Object, f.Value, f.Path...); err != nil {
			return nil, fmt.Errorf("setting %v: %w", f.Path, err)
		}
	}
	return u, nil
}

// Field is one field a grant sets: its path from the object's root and value.
type Field struct {
	Path  []string
	Value any
}

// RolloutFields are the rollout fields grant g sets on a member made from
// template t. A Deployment holds its grant as align.Stored says; one not
// started is paused with the same placeholder limits.
//
// A PodCliqueSet member holds its partition and paused. One of type
// ReplicaRecreate also holds maxUnavailable and maxSurge, which bound how many
// replicas its controller recreates at once and how many it adds above its
// share: the planner charges a partitioned member align.PartitionedInFlight
// units in flight and no surge, so that is what it gets, whatever the grant.
// Left to the template, every member would recreate and surge by the
// template's own limits, outside the global budget.
func RolloutFields(t *Template, g align.Grant) []Field {
	f := func(v any, path ...string) Field { return Field{Path: path, Value: v} }
	switch t.Kind {
	case Deployment:
		s := align.Stored(align.Deployment, g)
		paused, mu, ms := s.Paused, int64(s.MaxUnavailable), int64(s.MaxSurge)
		if !s.Started {
			// frozen on the template it holds, with the same placeholder
			paused, mu, ms = true, 1, 0
		}
		return []Field{
			f(paused, "spec", "paused"),
			f("RollingUpdate", "spec", "strategy", "type"),
			f(mu, "spec", "strategy", "rollingUpdate", "maxUnavailable"),
			f(ms, "spec", "strategy", "rollingUpdate", "maxSurge"),
		}
	case StatefulSet:
		return []Field{
			f("RollingUpdate", "spec", "updateStrategy", "type"),
			f(int64(g.Partition), "spec", "updateStrategy", "rollingUpdate", "partition"),
		}
	case PodCliqueSet:
		fs := []Field{
			f(g.Paused, "spec", "paused"),
			f(int64(g.Partition), "spec", "updateStrategy", "rollingUpdate", "partition"),
		}
		if t.Recreates() {
			fs = append(fs,
				f(int64(align.PartitionedInFlight), "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"),
				f(int64(0), "spec", "updateStrategy", "rollingUpdate", "maxSurge"))
		}
		return fs
	}
	return nil
}

// HeldGrant reads back the grant a member object carries, for a template of
// revision rev; nil for a partitioned member still on another revision (the
// planner then starts it with every unit held).
func HeldGrant(k Kind, obj *unstructured.Unstructured, rev string) *align.Grant {
	started := obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] == rev
	switch k {
	case Deployment:
		if !started {
			return &align.Grant{}
		}
		replicas := intField(obj, "spec", "replicas")
		paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused")
		return &align.Grant{
			Started:        true,
			Paused:         paused,
			MaxUnavailable: limitField(obj, replicas, limit.Down, "spec", "strategy", "rollingUpdate", "maxUnavailable"),
			MaxSurge:       limitField(obj, replicas, limit.Up, "spec", "strategy", "rollingUpdate", "maxSurge"),
		}
	default:
		if !started {
			return nil
		}
		paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused")
		return &align.Grant{Started: true, Partition: intField(obj, "spec", "updateStrategy", "rollingUpdate", "partition"), Paused: paused}
	}
}

// ObservedStatus is what a member object's status says, for revision rev.
type ObservedStatus struct {
	align.Status
	// Stale: the status does not describe the object's current spec yet.
	Stale bool
}

// StatusOf reads a member object's status. Units count as updated only when
// the object holds revision rev; updated units count as available when the
// available units outnumber the old ones (the old ones are taken to be
// available, the safe side for the budget).
func StatusOf(obj *unstructured.Unstructured, rev string) ObservedStatus {
	var s ObservedStatus
	s.Replicas = intField(obj, "status", "replicas")
	s.Terminating = intField(obj, "status", "terminatingReplicas")
	s.Available = intField(obj, "status", "availableReplicas")
	if obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] == rev {
		s.Updated = intField(obj, "status", "updatedReplicas")
	}
	s.UpdatedAvailable = min(s.Updated, max(0, s.Available-(s.Replicas-s.Updated)))
	og, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	s.Stale = og < obj.GetGeneration()
	return s
}

// deploymentRevision is the annotation a Deployment and its newest
// ReplicaSet share.
const deploymentRevision = "deployment.kubernetes.io/revision"

// WithReplicaSets folds into a Deployment's status what its ReplicaSets ask
// for, by align.WithReplicaSets. rss may hold other objects' ReplicaSets;
// only dep's own count.
func WithReplicaSets(s ObservedStatus, dep *unstructured.Unstructured, rss []unstructured.Unstructured, rev string) ObservedStatus {
	newRS := dep.GetAnnotations()[deploymentRevision]
	holdsRev := dep.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] == rev
	counts := make([]align.ReplicaSetCounts, 0, len(rss))
	for i := range rss {
		rs := &rss[i]
		if !ownedBy(rs, dep) {
			continue
		}
		og, _, _ := unstructured.NestedInt64(rs.Object, "status", "observedGeneration")
		counts = append(counts, align.ReplicaSetCounts{
			Spec:      intField(rs, "spec", "replicas"),
			Replicas:  intField(rs, "status", "replicas"),
			Available: intField(rs, "status", "availableReplicas"),
			Observed:  og >= rs.GetGeneration(),
			Newest:    newRS != "" && rs.GetAnnotations()[deploymentRevision] == newRS,
		})
	}
	s.Status = align.WithReplicaSets(s.Status, holdsRev, counts)
	return s
}

func ownedBy(obj, owner *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

func intField(obj *unstructured.Unstructured, path ...string) int32 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	switch n := v.(type) {
	case int64:
		return int32(n)
	case float64:
		return int32(n)
	}
	return 0
}

// limitField reads an int-or-percent limit of a member object, resolved against
// replicas; 0 when it is unset or malformed.
func limitField(obj *unstructured.Unstructured, replicas int32, r limit.Rounding, path ...string) int32 {
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if !found {
		return 0
	}
	var ios intstr.IntOrString
	switch x := v.(type) {
	case int64:
		ios = intstr.FromInt32(int32(x))
	case float64:
		ios = intstr.FromInt32(int32(x))
	case string:
		ios = intstr.FromString(x)
	default:
		return 0
	}
	n, _ := limit.Resolve(ios, replicas, r)
	return n
}
