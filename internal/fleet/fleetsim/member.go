package fleetsim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/deploysim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Member plays one member cluster in an offline fleet rollout: its apiserver,
// holding the workload's member object (and a Deployment's ReplicaSets) and
// taking the hub's writes by the apiserver's rules, and the object's own
// controller: a Deployment's are kube-controller-manager's Deployment and
// ReplicaSet controllers as deploysim plays them; the others replace units
// with the single-cluster planner (rollout.PlanLevel), a StatefulSet one
// unit at a time above its partition, a PodCliqueSet as podCliqueSetPolicy
// says. Units are
// pods, or PodCliqueSet replicas; each is made from the pod template its
// object held then, named by the fleet.lockstep.dev/template-revision
// annotation.
type Member struct {
	Name string
	obj  *unstructured.Unstructured
	// units are the object's units; they outlive a deleted object until
	// Settle (the garbage collector deletes them in the background).
	units []rollout.Unit
	// current is the revision a partitioned member makes units below its
	// partition at (a StatefulSet's currentRevision): the revision every unit
	// last ran.
	current string
	// dep is a Deployment's controllers, ReplicaSets and pods (see
	// deployment.go), which units do not hold; it outlives a deleted object
	// until Settle. synced is the object's generation its controller last
	// acted on.
	dep           *deploysim.Deployment
	synced        int64
	uids, version int
	// Received are the requests the member got, in order; the caller may
	// clear it.
	Received []Request
	// Late is how many reports what the hub reads of the member trails by:
	// Get and ReplicaSets show what its controllers wrote that many Reports
	// before (its status, a Deployment's revision annotation and its
	// ReplicaSets), as for a member whose status reaches the hub late. Its
	// controllers act on the object as it is, and the hub's writes land at
	// once.
	Late int
	// Conditions are status conditions another controller writes on the
	// member object (type to status); Report keeps them there.
	Conditions map[string]string
	// Frozen: time stands still in the member: its new units never start
	// and none goes (a member whose new pods cannot be scheduled): a rollout
	// there never completes.
	Frozen bool
	// reports are the last Late+2 reports, the newest last: those the hub
	// reads next and the one it read last.
	reports []report
}

// report is what a member's controllers wrote at one Report: all the hub
// reads of the object that they, not the hub, write.
type report struct {
	uid types.UID
	// status is the object's status, revision a Deployment's revision
	// annotation ("" for none).
	status      map[string]any
	revision    string
	replicaSets []unstructured.Unstructured
}

// Request is one write a member received.
type Request struct {
	Op string
	// Object is what was sent (Create, Apply), or, for a Delete, its kind,
	// namespace and name.
	Object *unstructured.Unstructured
	// UID and ResourceVersion are a Delete's preconditions.
	UID             types.UID
	ResourceVersion string
}

// Requests a Member takes.
const (
	OpCreate = "Create"
	OpApply  = "Apply"
	OpDelete = "Delete"
)

// deploymentRevision is the annotation a Deployment and its ReplicaSets
// number their pod templates with.
const deploymentRevision = "deployment.kubernetes.io/revision"

// NewMember is a member cluster holding no member object.
func NewMember(name string) *Member {
	return &Member{Name: name}
}

// Get is the member object as a read returns it, nil when there is none. A
// late member's shows the report of Late Reports before (none yet: no status).
func (m *Member) Get() *unstructured.Unstructured {
	if m.obj == nil {
		return nil
	}
	o := m.obj.DeepCopy()
	if m.Late > 0 {
		r := m.seen()
		delete(o.Object, "status")
		if r.status != nil {
			o.Object["status"] = runtime.DeepCopyJSON(r.status)
		}
		ann := o.GetAnnotations()
		delete(ann, deploymentRevision)
		if r.revision != "" {
			ann = merged(ann, map[string]string{deploymentRevision: r.revision})
		}
		o.SetAnnotations(ann)
	}
	return o
}

// seen is the report the hub reads now: the one Late Reports before, of the
// object there is now; the zero report when there is none.
func (m *Member) seen() report {
	i := len(m.reports) - 1 - m.Late
	if m.obj == nil || i < 0 || m.reports[i].uid != m.obj.GetUID() {
		return report{}
	}
	return m.reports[i]
}

// ReportsInFlight: a late member's reads have yet to settle: the reports
// from the one the hub read last to the latest are not all alike, so a later
// read shows the hub something new though the member stays still.
func (m *Member) ReportsInFlight() bool {
	if m.Late == 0 || len(m.reports) == 0 || m.obj == nil {
		return false
	}
	// After a Report, the hub's last read showed reports[len-2-Late].
	first := len(m.reports) - 2 - m.Late
	if first < 0 {
		return true // the hub has not read the first report yet
	}
	last := m.reports[len(m.reports)-1]
	for _, r := range m.reports[first:] {
		if r.uid != last.uid || r.revision != last.revision ||
			!equality.Semantic.DeepEqual(r.status, last.status) || !equality.Semantic.DeepEqual(r.replicaSets, last.replicaSets) {
			return true
		}
	}
	return false
}

// Create makes the member object; it fails when one exists.
func (m *Member) Create(obj *unstructured.Unstructured) error {
	m.Received = append(m.Received, Request{Op: OpCreate, Object: obj.DeepCopy()})
	if m.obj != nil {
		return fmt.Errorf("member %s: create %s: already exists", m.Name, obj.GetName())
	}
	m.uids++
	o := obj.DeepCopy()
	o.SetUID(types.UID(fmt.Sprintf("%s-uid-%d", m.Name, m.uids)))
	o.SetGeneration(1)
	m.obj = o
	m.bump()
	m.current = revisionOf(o)
	if o.GetKind() == string(member.Deployment) {
		m.dep = deploysim.New(deploymentSpec(o))
	}
	return nil
}

// Apply takes the hub's fields by server-side apply to the object obj's UID
// names: its spec, and the labels and annotations it sends (others stay).
// It fails when there is no object or another one holds the name.
func (m *Member) Apply(obj *unstructured.Unstructured) error {
	m.Received = append(m.Received, Request{Op: OpApply, Object: obj.DeepCopy()})
	switch {
	case m.obj == nil:
		return fmt.Errorf("member %s: apply %s: not found", m.Name, obj.GetName())
	case obj.GetUID() != m.obj.GetUID():
		return fmt.Errorf("member %s: apply %s: uid %s, the object's is %s", m.Name, obj.GetName(), obj.GetUID(), m.obj.GetUID())
	}
	o := m.obj.DeepCopy()
	o.SetLabels(merged(o.GetLabels(), obj.GetLabels()))
	o.SetAnnotations(merged(o.GetAnnotations(), obj.GetAnnotations()))
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if !equality.Semantic.DeepEqual(o.Object["spec"], any(spec)) {
		o.Object["spec"] = spec
		o.SetGeneration(o.GetGeneration() + 1)
	}
	m.obj = o
	m.bump()
	return nil
}

// Delete deletes the member object when it still is the one of uid and
// resourceVersion; its units go in the background.
func (m *Member) Delete(obj *unstructured.Unstructured, uid types.UID, resourceVersion string) error {
	m.Received = append(m.Received, Request{Op: OpDelete, Object: obj.DeepCopy(), UID: uid, ResourceVersion: resourceVersion})
	switch {
	case m.obj == nil:
		return fmt.Errorf("member %s: delete %s: not found", m.Name, obj.GetName())
	case m.obj.GetUID() != uid || m.obj.GetResourceVersion() != resourceVersion:
		return fmt.Errorf("member %s: delete %s: precondition failed (uid %s, resourceVersion %s; the object's %s, %s)",
			m.Name, obj.GetName(), uid, resourceVersion, m.obj.GetUID(), m.obj.GetResourceVersion())
	}
	m.obj = nil
	if m.dep != nil {
		m.dep.TerminateAll()
	}
	for i := range m.units {
		m.units[i].Terminating, m.units[i].Ready, m.units[i].Available = true, false, false
	}
	return nil
}

func (m *Member) bump() {
	m.version++
	m.obj.SetResourceVersion(strconv.Itoa(m.version))
}

// Act runs one pass of the object's controller: deletes, then creates (new
// units start unavailable). A Deployment's controllers act until they wait
// for pods to start or go.
func (m *Member) Act() error {
	if m.dep != nil {
		if m.obj != nil {
			m.actDeployment()
		}
		return nil
	}
	p, ok := m.policy()
	if !ok {
		return nil
	}
	plan, err := rollout.PlanLevel(p, m.units)
	if err != nil {
		return fmt.Errorf("member %s: %w", m.Name, err)
	}
	m.units = rollout.Played(m.units, plan)
	return nil
}

// policy is what the object tells its controller, read as that controller
// reads it; false when there is no object.
func (m *Member) policy() (rollout.Policy, bool) {
	if m.obj == nil {
		return rollout.Policy{}, false
	}
	kind, _ := member.KindOf(m.obj.GetAPIVersion(), m.obj.GetKind())
	replicas := int32(intField(m.obj, "spec", "replicas"))
	p := rollout.Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: replicas, UpdateRevision: revisionOf(m.obj),
		CurrentRevision: m.current, UpdateOrder: rollout.LowestIndexFirst, ScaleIn: rollout.HighestIndexFirst}
	switch kind {
	case member.PodCliqueSet:
		p = podCliqueSetPolicy(m.obj, p)
	default:
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(1), intstr.FromInt32(0)
		p.Partition = int32(intField(m.obj, "spec", "updateStrategy", "rollingUpdate", "partition"))
	}
	return p, true
}

// Settle lets terminating units go and new units become available.
func (m *Member) Settle() {
	if m.Frozen {
		return
	}
	if m.dep != nil {
		m.settleDeployment()
		return
	}
	m.units = rollout.Settled(m.units)
}

// Report writes the object's status from its units, as its controller
// would, having observed its generation. A member whose every unit runs the
// object's revision takes it as its current revision.
func (m *Member) Report() {
	if m.obj == nil {
		return
	}
	defer m.keepReport()
	defer m.reportConditions()
	rev := revisionOf(m.obj)
	if m.dep != nil {
		_ = unstructured.SetNestedField(m.obj.Object, m.deploymentStatus(), "status")
		if m.dep.Revision != 0 {
			m.obj.SetAnnotations(merged(m.obj.GetAnnotations(), map[string]string{deploymentRevision: strconv.FormatInt(m.dep.Revision, 10)}))
		}
		return
	}
	c := m.Count(rev)
	_ = unstructured.SetNestedField(m.obj.Object, map[string]any{
		"observedGeneration": m.obj.GetGeneration(),
		"replicas":           int64(c.Replicas), "updatedReplicas": int64(c.Updated), "readyReplicas": int64(c.Available),
		"availableReplicas": int64(c.Available), "terminatingReplicas": int64(c.Terminating),
	}, "status")
	if c.Updated == c.Replicas && c.Terminating == 0 {
		m.current = rev
	}
}

// reportConditions writes Conditions into the object's status.
func (m *Member) reportConditions() {
	if len(m.Conditions) == 0 {
		return
	}
	var list []any
	for _, t := range slices.Sorted(maps.Keys(m.Conditions)) {
		list = append(list, map[string]any{"type": t, "status": m.Conditions[t]})
	}
	_ = unstructured.SetNestedSlice(m.obj.Object, list, "status", "conditions")
}

// keepReport keeps what Report wrote for a late member's reads, the last
// Late+2 reports.
func (m *Member) keepReport() {
	if m.Late == 0 {
		return
	}
	st, _, _ := unstructured.NestedMap(m.obj.Object, "status")
	m.reports = append(m.reports, report{uid: m.obj.GetUID(), status: st,
		revision: m.obj.GetAnnotations()[deploymentRevision], replicaSets: m.replicaSetsNow()})
	if n := len(m.reports) - (m.Late + 2); n > 0 {
		m.reports = slices.Delete(m.reports, 0, n)
	}
}

// ReplicaSets are a Deployment member's ReplicaSets, as its controllers left
// them (a late member's: as the hub reads them, Late Reports before).
func (m *Member) ReplicaSets() []unstructured.Unstructured {
	if m.Late > 0 {
		var out []unstructured.Unstructured
		for _, rs := range m.seen().replicaSets {
			out = append(out, *rs.DeepCopy())
		}
		return out
	}
	return m.replicaSetsNow()
}

func (m *Member) replicaSetsNow() []unstructured.Unstructured {
	if m.obj == nil || m.dep == nil {
		return nil
	}
	return m.deploymentReplicaSets()
}

// Counts are a member's units: Replicas live (not terminating), Terminating,
// Available among the live, Updated the live ones of a revision and
// UpdatedAvailable those of them available.
type Counts struct {
	Replicas, Terminating, Available, Updated, UpdatedAvailable int32
}

// Count counts the member's units, Updated those of revision rev.
func (m *Member) Count(rev string) Counts {
	if m.dep != nil {
		return m.deploymentCounts(rev)
	}
	var c Counts
	for _, u := range m.units {
		if u.Terminating {
			c.Terminating++
			continue
		}
		c.Replicas++
		if u.Available {
			c.Available++
		}
		if u.Revision == rev {
			c.Updated++
			if u.Available {
				c.UpdatedAvailable++
			}
		}
	}
	return c
}

// State is the member's units and object spec: two equal states mean
// nothing moved.
func (m *Member) State() string {
	var spec any
	if m.obj != nil {
		spec = m.obj.Object["spec"]
	}
	if m.dep != nil {
		return fmt.Sprint(m.dep, spec)
	}
	return fmt.Sprint(m.units, spec)
}

func revisionOf(obj *unstructured.Unstructured) string {
	return obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision]
}

func merged(into, from map[string]string) map[string]string {
	out := maps.Clone(into)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, from)
	return out
}

func intField(obj *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// intOrString reads an int-or-percent field as the object's controller does.
func intOrString(obj *unstructured.Unstructured, path ...string) intstr.IntOrString {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	switch x := v.(type) {
	case string:
		return intstr.FromString(x)
	case int64:
		return intstr.FromInt32(int32(x))
	case float64:
		return intstr.FromInt32(int32(x))
	}
	return intstr.IntOrString{}
}
