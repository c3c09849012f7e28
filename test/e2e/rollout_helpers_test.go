//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// Helpers shared by the strategy tests: the end state every rollout must reach,
// and what the timeline says about whole PodCliqueSet replicas.

// progressingOf is the Progressing condition of a PodCliqueSet, or nil.
func progressingOf(pcs *v1alpha1.PodCliqueSet) *metav1.Condition {
	return apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
}

// progressingIs reports whether the status describes the current generation and
// its Progressing condition has the given reason.
func progressingIs(pcs *v1alpha1.PodCliqueSet, reason v1alpha1.ConditionReason) bool {
	c := progressingOf(pcs)
	return pcs.Status.ObservedGeneration == pcs.Generation && c != nil && c.Reason == string(reason) && c.ObservedGeneration == pcs.Generation
}

// assertRolledOut checks the end of a rollout to pcs's spec: every pod on its
// clique's template hash, indices without holes, every replica counted updated
// and available, no replica beyond spec.replicas, Progressing RolloutComplete.
func (s *scene) assertRolledOut(o *observed, pcs *v1alpha1.PodCliqueSet) {
	t := s.t
	t.Helper()
	hashes := templateHashes(t, pcs)
	for i := range o.pods {
		p := &o.pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if h := p.Labels[v1alpha1.LabelTemplateHash]; h != hashes[p.Labels[v1alpha1.LabelClique]] {
			t.Errorf("pod %s has template hash %s, want %s", p.Name, h, hashes[p.Labels[v1alpha1.LabelClique]])
		}
		if r, _ := strconv.Atoi(p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex]); int32(r) >= *pcs.Spec.Replicas {
			t.Errorf("pod %s of replica %d is left after the rollout", p.Name, r)
		}
	}
	if err := s.indicesWithoutHoles(t.Context()); err != nil {
		t.Error(err)
	}
	st := &o.pcs.Status
	want := *pcs.Spec.Replicas
	if st.Replicas != want || st.UpdatedReplicas != want || st.AvailableReplicas != want {
		t.Errorf("status after the rollout: %s(want replicas, updated and available all %d)", statusLine(o.pcs), want)
	}
	if c := progressingOf(o.pcs); c == nil || c.Reason != string(v1alpha1.ReasonRolloutComplete) || c.Status != metav1.ConditionTrue {
		t.Errorf("Progressing after the rollout: %+v, want True RolloutComplete", c)
	}
}

// loadExampleAsApplied reads a manifest of examples/ as `kubectl apply` would
// send it, with the CRD's defaults for the fields it leaves out: a typed
// object would send replicas: 0 for a clique that does not say (the field has
// no omitempty), where the apiserver defaults an absent one to 1. A server
// dry run in namespace default fills them in.
func loadExampleAsApplied(t *testing.T, name string) *v1alpha1.PodCliqueSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	u.SetNamespace(metav1.NamespaceDefault)
	if err := testCluster.Client.Create(t.Context(), u, client.DryRunAll); err != nil {
		t.Fatalf("dry run of %s: %v", name, err)
	}
	pcs := &v1alpha1.PodCliqueSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pcs); err != nil {
		t.Fatal(err)
	}
	pcs.ObjectMeta = metav1.ObjectMeta{Name: pcs.Name, Labels: pcs.Labels, Annotations: pcs.Annotations}
	pcs.Status = v1alpha1.PodCliqueSetStatus{}
	return pcs
}

// withoutGPUs drops the GPU requests of every clique: for tests about
// revisions rather than capacity, so that many replicas fit on one node.
func withoutGPUs(pcs *v1alpha1.PodCliqueSet) *v1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	for i := range pcs.Spec.Template.Cliques {
		cs := pcs.Spec.Template.Cliques[i].Template.Spec.Containers
		for j := range cs {
			delete(cs[j].Resources.Limits, gpuResource)
			delete(cs[j].Resources.Requests, gpuResource)
		}
	}
	return pcs
}

// withReplicas sets spec.replicas.
func withReplicas(pcs *v1alpha1.PodCliqueSet, n int32) *v1alpha1.PodCliqueSet {
	pcs = pcs.DeepCopy()
	pcs.Spec.Replicas = new(n)
	return pcs
}

// namespaceEvents are the Events of ns with the given reason, oldest first.
func namespaceEvents(t *testing.T, ns, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := testCluster.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool { return e.Reason != reason })
	slices.SortStableFunc(out, func(a, b eventsv1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	return out
}

// trackRevisions keeps the PodCliqueSet revision label of every pod as a
// replay goes, which podRecord leaves out.
type revisionTracker map[string]string

func (r revisionTracker) see(e monitor.Event) {
	switch e.Kind {
	case monitor.PodCreated, monitor.PodPresent, monitor.PodRelabel:
		r[e.Name] = e.Revision
	case monitor.PodDeleted:
		delete(r, e.Name)
	}
}

// liveRevisions are, per PCS replica, the revisions its live (not terminating)
// pods run.
func (r revisionTracker) liveRevisions(pods map[string]*podRecord) map[int32][]string {
	out := map[int32][]string{}
	for name, p := range pods {
		if p.terminating {
			continue
		}
		if rev := r[name]; !slices.Contains(out[p.replica], rev) {
			out[p.replica] = append(out[p.replica], rev)
		}
	}
	return out
}

// mixedRevisions returns a description of every moment from from on at which a
// PodCliqueSet replica had live pods of two revisions (at most a few).
func mixedRevisions(events []monitor.Event, from time.Time) []string {
	var out []string
	revs := revisionTracker{}
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		revs.see(e)
		if e.Time.Before(from) || len(out) >= 5 {
			return
		}
		for replica, rs := range revs.liveRevisions(pods) {
			if len(rs) > 1 {
				slices.Sort(rs)
				out = append(out, fmt.Sprintf("%s after %s %s: PCS replica %d runs revisions %v",
					e.Time.Format("15:04:05.000"), e.Kind, e.Name, replica, rs))
			}
		}
	})
	return out
}

// teardown is how one PodCliqueSet replica went from one revision to the next
// under ReplicaRecreate.
type teardown struct {
	replica             int32
	oldPods             int
	firstGone, lastGone time.Time // first and last old pod to start terminating
	firstNew            time.Time // first pod of the new revision created in it
}

// checkWholeReplicaTeardowns checks from the timeline that every PCS replica
// below replicas went down whole before it came back on newRevision: each of
// the old pods it had at from was deleted, and all of them had begun
// terminating before the first pod of the new revision was created in it.
func checkWholeReplicaTeardowns(t *testing.T, events []monitor.Event, from time.Time, replicas int32, newRevision string) []teardown {
	t.Helper()
	revs := revisionTracker{}
	old := map[int32][]string{} // PCS replica → its pods at from
	gone := map[string]time.Time{}
	firstNew := map[int32]time.Time{}
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		revs.see(e)
		if e.Time.Before(from) {
			clear(old)
			for name, p := range pods {
				if !p.terminating && revs[name] != newRevision {
					old[p.replica] = append(old[p.replica], name)
				}
			}
			return
		}
		switch e.Kind {
		case monitor.PodDeleting, monitor.PodDeleted:
			if _, ok := gone[e.Name]; !ok {
				gone[e.Name] = e.Time
			}
		case monitor.PodCreated:
			if e.Revision == newRevision && firstNew[e.Replica].IsZero() {
				firstNew[e.Replica] = e.Time
			}
		}
	})
	var out []teardown
	for r := range replicas {
		td := teardown{replica: r, oldPods: len(old[r]), firstNew: firstNew[r]}
		if td.oldPods == 0 {
			t.Errorf("PCS replica %d had no pods off revision %s when the rollout began", r, newRevision)
			continue
		}
		for _, name := range old[r] {
			at, ok := gone[name]
			if !ok {
				t.Errorf("old pod %s of PCS replica %d was never deleted", name, r)
				continue
			}
			if td.firstGone.IsZero() || at.Before(td.firstGone) {
				td.firstGone = at
			}
			if at.After(td.lastGone) {
				td.lastGone = at
			}
		}
		switch {
		case td.firstNew.IsZero():
			t.Errorf("no pod of revision %s was created in PCS replica %d", newRevision, r)
		case td.firstNew.Before(td.lastGone):
			t.Errorf("PCS replica %d: a pod of the new revision was created at %s, before its last old pod began terminating at %s: the replica was not torn down whole",
				r, td.firstNew.Format("15:04:05.000"), td.lastGone.Format("15:04:05.000"))
		}
		out = append(out, td)
	}
	return out
}

// replicaAvailableAt reports whether a PCS replica is available in a replayed
// moment: every standalone clique and every scaling group has its minAvailable
// of available units.
func replicaAvailableAt(spec *v1alpha1.PodCliqueSetSpec, pods map[string]*podRecord, replica int32) bool {
	for _, role := range roles(spec) {
		least := int32(1)
		if c := spec.Template.Clique(role); c != nil && spec.Template.ScalingGroupOf(role) == nil {
			least = c.EffectiveMinAvailable()
		}
		for i := range spec.Template.PodCliqueScalingGroups {
			if g := &spec.Template.PodCliqueScalingGroups[i]; g.Name == role {
				least = g.EffectiveMinAvailable()
			}
		}
		if availableUnits(spec, pods, replica, role) < least {
			return false
		}
	}
	return true
}

// fewestAvailableReplicas is the fewest PCS replicas (surge ones included)
// available at any moment from from on, and when that was first the case.
func fewestAvailableReplicas(events []monitor.Event, spec *v1alpha1.PodCliqueSetSpec, from time.Time) (int32, time.Time) {
	fewest, at := int32(-1), time.Time{}
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		if e.Time.Before(from) {
			return
		}
		indices := map[int32]bool{}
		for _, p := range pods {
			indices[p.replica] = true
		}
		n := int32(0)
		for r := range indices {
			if replicaAvailableAt(spec, pods, r) {
				n++
			}
		}
		if fewest < 0 || n < fewest {
			fewest, at = n, e.Time
		}
	})
	return fewest, at
}

// unitOf names the unit a pod event belongs to in its PCS replica: "<group>-<j>"
// for a scaling-group replica, "<clique>/<index>" for a pod of a standalone
// clique; role is the group or the clique.
func unitOf(e monitor.Event) (unit, role string) {
	if e.Group != "" {
		return fmt.Sprintf("%s-%d", e.Group, e.GroupReplica), e.Group
	}
	return fmt.Sprintf("%s/%d", e.Clique, e.Index), e.Clique
}

// updatedReadyUnits counts the units of a role of one PCS replica, at indices
// below the role's replicas, that run the template hashes and are Ready: the
// quantity role steps wait for.
func updatedReadyUnits(spec *v1alpha1.PodCliqueSetSpec, hashes map[string]string, pods map[string]*podRecord, replica int32, role string) int32 {
	for i := range spec.Template.PodCliqueScalingGroups {
		g := &spec.Template.PodCliqueScalingGroups[i]
		if g.Name != role {
			continue
		}
		n := int32(0)
		for j := range g.Replicas {
			ok, live := true, 0
			ready := map[string]int32{}
			for _, p := range pods {
				if p.replica != replica || p.group != role || p.groupReplica != j || p.terminating {
					continue
				}
				live++
				if p.hash != hashes[p.clique] {
					ok = false
				}
				if p.ready {
					ready[p.clique]++
				}
			}
			for _, name := range g.CliqueNames {
				if c := spec.Template.Clique(name); c == nil || ready[name] < c.EffectiveMinAvailable() {
					ok = false
				}
			}
			if ok && live > 0 {
				n++
			}
		}
		return n
	}
	n := int32(0)
	c := spec.Template.Clique(role)
	for _, p := range pods {
		if c != nil && p.replica == replica && p.group == "" && p.clique == role && p.index < c.Replicas &&
			!p.terminating && p.ready && p.hash == hashes[role] {
			n++
		}
	}
	return n
}

// stepPlan is the order role steps replace units in, inside one PCS replica:
// for each replacement its role and the step it belongs to. Roles no step
// names come last.
func stepPlan(t *testing.T, spec *v1alpha1.PodCliqueSetSpec) (rolesInOrder []string, stepOf []int, targets []int32) {
	t.Helper()
	done := map[string]int32{}
	for i, st := range spec.UpdateStrategy.RoleUpgrade.Steps {
		to, err := rollout.ResolveUpdateTo(st.UpdateTo, roleUnits(spec, st.Role))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		targets = append(targets, to)
		for ; done[st.Role] < to; done[st.Role]++ {
			rolesInOrder = append(rolesInOrder, st.Role)
			stepOf = append(stepOf, i)
		}
	}
	for _, role := range roles(spec) {
		for ; done[role] < roleUnits(spec, role); done[role]++ {
			rolesInOrder = append(rolesInOrder, role)
			stepOf = append(stepOf, len(spec.UpdateStrategy.RoleUpgrade.Steps))
		}
	}
	return rolesInOrder, stepOf, targets
}

// checkRoleStepOrder checks from the timeline a role-step rollout to pcs's
// spec that began at from: inside every PCS replica the units were replaced in
// the order the steps give, each unit once, and the first replacement of each
// step came only once the step before it had its target of units updated and
// Ready. It returns the replacement order seen per PCS replica.
func checkRoleStepOrder(t *testing.T, events []monitor.Event, from time.Time, pcs *v1alpha1.PodCliqueSet) map[int32][]string {
	t.Helper()
	spec := &pcs.Spec
	steps := spec.UpdateStrategy.RoleUpgrade.Steps
	hashes := templateHashes(t, pcs)
	wantRoles, stepOf, targets := stepPlan(t, spec)

	type key struct {
		name string
		at   time.Time
		kind monitor.EventKind
	}
	isDeletion := map[key]bool{}
	for _, e := range operatorDeletions(t, events, from) {
		isDeletion[key{e.Name, e.Time, e.Kind}] = true
	}
	seen := map[int32]map[string]bool{}
	order := map[int32][]string{} // units
	gotRoles := map[int32][]string{}
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		if !isDeletion[key{e.Name, e.Time, e.Kind}] {
			return
		}
		unit, role := unitOf(e)
		if seen[e.Replica] == nil {
			seen[e.Replica] = map[string]bool{}
		}
		if seen[e.Replica][unit] {
			return // another pod of a group replica already going
		}
		seen[e.Replica][unit] = true
		n := len(order[e.Replica])
		order[e.Replica] = append(order[e.Replica], unit)
		gotRoles[e.Replica] = append(gotRoles[e.Replica], role)
		if n >= len(stepOf) || n == 0 || stepOf[n] == stepOf[n-1] {
			return // not the first replacement of a step
		}
		prev := stepOf[n] - 1
		if prev < 0 || prev >= len(steps) {
			return
		}
		if have := updatedReadyUnits(spec, hashes, pods, e.Replica, steps[prev].Role); have < targets[prev] {
			t.Errorf("PCS replica %d: step %d began (%s deleted at %s) with only %d of %d %s units updated and Ready: step %d was not satisfied",
				e.Replica, stepOf[n], e.Name, e.Time.Format("15:04:05.000"), have, targets[prev], steps[prev].Role, prev)
		}
	})
	for r := range *spec.Replicas {
		if !slices.Equal(gotRoles[r], wantRoles) {
			t.Errorf("PCS replica %d replaced units %v (roles %v), want roles in the order %v", r, order[r], gotRoles[r], wantRoles)
		}
	}
	return order
}

// roleStepEvents parses the RoleStepStarted Events of ns ("Replica 0: step 2,
// prefill to 1 ...", steps counted from 1) into "<replica>/<step index>/<role>".
func roleStepEvents(t *testing.T, ns string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`^Replica (\d+): step (\d+), (\S+) to `)
	out := map[string]bool{}
	for _, e := range namespaceEvents(t, ns, "RoleStepStarted") {
		m := re.FindStringSubmatch(e.Note)
		if m == nil {
			t.Errorf("RoleStepStarted Event with an unexpected note: %q", e.Note)
			continue
		}
		step, _ := strconv.Atoi(m[2])
		out[fmt.Sprintf("%s/%d/%s", m[1], step-1, m[3])] = true
	}
	return out
}

// podNamed returns the pod of an observation with the given name, or nil.
func podNamed(o *observed, name string) *corev1.Pod {
	for i := range o.pods {
		if o.pods[i].Name == name {
			return &o.pods[i]
		}
	}
	return nil
}

// livePodAt is the live pod at an index of a standalone clique of a replica.
func livePodAt(o *observed, replica int, clique string, index int) *corev1.Pod {
	for i := range o.pods {
		p := &o.pods[i]
		if p.DeletionTimestamp == nil && p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex] == strconv.Itoa(replica) &&
			p.Labels[v1alpha1.LabelClique] == clique && p.Labels[v1alpha1.LabelPodIndex] == strconv.Itoa(index) {
			return p
		}
	}
	return nil
}

// sinceStart formats a time relative to start, for logs.
func sinceStart(at, start time.Time) string {
	return at.Sub(start).Round(10 * time.Millisecond).String()
}

// joinLines is for failure messages listing moments.
func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// awaitProgressing waits for the Progressing condition of the current
// generation to have reason and returns the observation.
func (s *scene) awaitProgressing(what string, timeout time.Duration, reason v1alpha1.ConditionReason) *observed {
	s.t.Helper()
	var last *observed
	s.mustAwait(what, timeout, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		last = o
		return progressingIs(o.pcs, reason), o.describe(), nil
	})
	return last
}
