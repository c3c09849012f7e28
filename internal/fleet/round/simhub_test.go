package round

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// simHub plays the hub's FederatedWorkload controller over member clusters
// played in memory (fleetsim.Member): each round it reads what ReadsOf names,
// runs Plan and delivers the writes; the status a round returns is the
// workload's from then on, unless a test replaces it. The placement selects
// the clusters labelled fleet=web; a cluster leaves it by losing the label.
type simHub struct {
	fw      *fleetv1alpha1.FederatedWorkload
	base    Input
	members map[string]*fleetsim.Member
	// unread are the clusters whose reads fail this round (their
	// MemberClusters stay Ready: the hub just gets no answer).
	unread map[string]bool
	rounds int
}

const simFleetLabel = "fleet"

func newSimHub(fw *fleetv1alpha1.FederatedWorkload, clusters []string) *simHub {
	h := &simHub{fw: fw, members: map[string]*fleetsim.Member{}, unread: map[string]bool{}}
	h.base = Input{Placed: slices.Clone(clusters), RolloutPoll: poll, Resync: resync,
		Placement: &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: "p"},
			Spec: fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{simFleetLabel: "web"}}}},
		Sets: []fleetv1alpha1.MemberClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "all"}}},
		Bindings: []fleetv1alpha1.MemberClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: "all"},
			Spec: fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: "all"}}},
	}
	for _, c := range clusters {
		mc := readyCluster(c, metav1.ConditionTrue, t0.Add(-time.Hour))
		mc.Labels = map[string]string{simFleetLabel: "web", "n": c}
		h.base.MemberClusters = append(h.base.MemberClusters, mc)
		h.members[c] = fleetsim.NewMember(c)
	}
	return h
}

// leave takes cluster c out of the placement: it no longer matches its
// selector, and the decisions drop it.
func (h *simHub) leave(c string) {
	h.base.Placed = slices.DeleteFunc(h.base.Placed, func(n string) bool { return n == c })
	for i := range h.base.MemberClusters {
		if h.base.MemberClusters[i].Name == c {
			delete(h.base.MemberClusters[i].Labels, simFleetLabel)
		}
	}
}

// observe is the input of the next round as the controller reads it.
func (h *simHub) observe() Input {
	in := h.base
	in.Workload = h.fw
	in.Now = t0.Add(time.Duration(h.rounds) * poll)
	reads := ReadsOf(in)
	in.Members = map[string]Observed{}
	for _, name := range reads.Clusters {
		m := h.members[name]
		if m == nil || h.unread[name] {
			continue
		}
		obs := Observed{Read: true, Object: m.Get()}
		if reads.ReplicaSets && obs.Object != nil {
			obs.ReplicaSets, obs.ReplicaSetsRead = m.ReplicaSets(), true
		}
		in.Members[name] = obs
	}
	return in
}

// round runs one round and delivers its writes, as the controller does.
func (h *simHub) round() (Output, error) {
	out := Plan(h.observe())
	return out, h.deliver(out)
}

// deliver makes a round's writes and takes its status as the workload's.
func (h *simHub) deliver(out Output) error {
	h.rounds++
	if out.Stuck != "" {
		return fmt.Errorf("stuck: %s", out.Stuck)
	}
	if len(out.Unwritable) > 0 {
		return fmt.Errorf("unwritable: %v", out.Unwritable)
	}
	for _, w := range out.Writes {
		m := h.members[w.Cluster]
		if h.unread[w.Cluster] {
			return fmt.Errorf("a write to %s, which was not read", w.Cluster)
		}
		var err error
		switch w.Op {
		case Create:
			err = m.Create(w.Object)
		case Apply:
			err = m.Apply(w.Object)
		case Delete:
			err = m.Delete(w.Object, w.UID, w.ResourceVersion)
		}
		if err != nil {
			return err
		}
	}
	h.fw.Status = out.Status
	return nil
}

// names are the member clusters in name order.
func (h *simHub) names() []string {
	return slices.Sorted(maps.Keys(h.members))
}

// fleetCounts are the units of every member: available ones, all of them,
// those on revision rev (each member's counted up to its replicas: those
// above are its surge), and the members' replicas together. A partitioned
// member's units are all of them, terminating ones too; a Deployment's are
// its pods that are not terminating, as a watcher outside it bounds them
// (maxSurge bounds those, as the Deployment controller counts them).
func (h *simHub) fleetCounts(rev string) (available, units, updated, scales int32) {
	tmpl, _ := member.ParseTemplate(h.fw.Spec.Template.Raw)
	for _, name := range h.names() {
		m := h.members[name]
		c := m.Count(rev)
		var scale int32
		if obj := m.Get(); obj != nil {
			v, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
			scale = int32(v)
		}
		available += c.Available
		units += c.Replicas
		if tmpl.Kind != member.Deployment {
			units += c.Terminating
		}
		updated += min(c.Updated, scale)
		scales += scale
	}
	return available, units, updated, scales
}

// step lets every member's controller act (check, when set, sees the fleet
// after each), then lets time pass: units settle and the members not lagging
// report.
func (h *simHub) step(r int, lagging map[string]bool, check func(when string)) error {
	for _, c := range h.names() {
		if err := h.members[c].Act(); err != nil {
			return err
		}
		if check != nil {
			check(fmt.Sprintf("round %d, %s acted", r, c))
		}
	}
	for _, c := range h.names() {
		m := h.members[c]
		m.Settle()
		if !lagging[c] {
			m.Report()
		}
	}
	if check != nil {
		check(fmt.Sprintf("round %d, settled", r))
	}
	return nil
}

// budgetBreach says how the fleet breaks the workload's global invariants
// for the rollout to rev, "" when it keeps them: at least replicas −
// maxUnavailable available, at most replicas + maxSurge units, at most
// replicas − partition on the new revision (plus those above a member's
// replicas and the members' replicas above the global ones while shares
// move: surge).
func (h *simHub) budgetBreach(rev string) string {
	replicas, partition, budget := h.fw.Spec.Replicas, h.fw.Spec.RolloutStrategy.Partition, budgetOf(h.fw)
	available, units, updated, scales := h.fleetCounts(rev)
	most := replicas - partition + max(0, scales-replicas)
	if available < replicas-budget.MaxUnavailable || units > replicas+budget.MaxSurge || updated > most {
		return fmt.Sprintf("%d available (floor %d), %d units (ceiling %d), %d updated (at most %d):%s",
			available, replicas-budget.MaxUnavailable, units, replicas+budget.MaxSurge, updated, most, h.layout(rev))
	}
	return ""
}

// layout is every member's spec and units, for failure messages.
func (h *simHub) layout(rev string) string {
	var b strings.Builder
	for _, name := range h.names() {
		m := h.members[name]
		c := m.Count(rev)
		spec := "none"
		if obj := m.Get(); obj != nil {
			s, _ := json.Marshal(obj.Object["spec"].(map[string]any)["replicas"])
			spec = fmt.Sprintf("replicas=%s rev=%.6s grant=%s", s, obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision],
				obj.GetAnnotations()[fleetv1alpha1.AnnotationGrant])
		}
		fmt.Fprintf(&b, "\n  %s: %s units=%d+%dt avail=%d updated=%d", name, spec, c.Replicas, c.Terminating, c.Available, c.Updated)
	}
	return b.String()
}

func statefulSetTemplate(image string) runtime.RawExtension {
	raw, _ := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"spec": map[string]any{
			"serviceName": "web",
			"selector":    map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}},
			},
		},
	})
	return runtime.RawExtension{Raw: raw}
}

// simWorkload is a workload of kind k at image, divided by weights (one a
// cluster, by its label n), with the given limits.
func simWorkload(k member.Kind, image string, replicas, mu, ms int32, weights map[string]int32) *fleetv1alpha1.FederatedWorkload {
	fw := workload(replicas)
	if k == member.StatefulSet {
		fw.Spec.Template = statefulSetTemplate(image)
	} else {
		fw.Spec.Template = deploymentTemplate(image)
	}
	u, s := intstr.FromInt32(mu), intstr.FromInt32(ms)
	fw.Spec.RolloutStrategy.MaxUnavailable, fw.Spec.RolloutStrategy.MaxSurge = &u, &s
	fw.Spec.Division.Weights = divisionOf(weights)
	return fw
}

func divisionOf(weights map[string]int32) []fleetv1alpha1.ClusterWeight {
	var out []fleetv1alpha1.ClusterWeight
	for _, c := range slices.Sorted(maps.Keys(weights)) {
		out = append(out, fleetv1alpha1.ClusterWeight{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"n": c}}, Weight: weights[c]})
	}
	return out
}

// maxRestRounds bounds the rounds that bring a fleet to rest.
const maxRestRounds = 20

// rest plays rounds, each member acting and reporting after each, until the
// planner says done and the round moved nothing.
func (h *simHub) rest() error {
	for range maxRestRounds {
		before := h.state()
		out, err := h.round()
		if err != nil {
			return err
		}
		if err := h.step(h.rounds, nil, nil); err != nil {
			return err
		}
		if out.Plan.Done && h.state() == before {
			return nil
		}
	}
	return fmt.Errorf("not at rest after %d rounds", maxRestRounds)
}

func (h *simHub) state() string {
	var b strings.Builder
	for _, name := range h.names() {
		b.WriteString(h.members[name].State())
	}
	return b.String()
}
