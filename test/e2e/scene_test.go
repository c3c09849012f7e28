//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/validation"
	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// scene is one PodCliqueSet under test, in a namespace of its own, watched by
// the invariant monitor from before it is created until the test ends.
type scene struct {
	t    *testing.T
	ns   string
	name string
	m    *monitor.Monitor
	// watched is when the monitor started (its timeline counts from there);
	// created when the PodCliqueSet was created.
	watched, created time.Time
}

// newScene makes the cluster have nodes GPU nodes, starts the monitor and
// creates pcs (admitted first: defaulted and validated as by the webhooks). When
// the test ends the PodCliqueSet is deleted and its pods waited for, so that
// they hold no GPUs in the next test.
func newScene(t *testing.T, nodes int, pcs *v1alpha1.PodCliqueSet) *scene {
	t.Helper()
	ctx := t.Context()
	if err := testCluster.SetNodes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	s := &scene{t: t, ns: newNamespace(t, pcs.Name), name: pcs.Name}
	t.Cleanup(s.tearDown)
	s.watched = time.Now()
	s.m = monitor.Options{PollInterval: 200 * time.Millisecond, DeletedByNodeAgent: kwokDeleted(s.ns)}.Start(ctx, t, testCluster.RESTConfig, s.ns, s.name)
	pcs = pcs.DeepCopy()
	pcs.Namespace = s.ns
	if err := admit(ctx, pcs, nil); err != nil {
		t.Fatal(err)
	}
	s.created = time.Now()
	if err := testCluster.Client.Create(ctx, pcs); err != nil {
		t.Fatalf("create PodCliqueSet %s: %v", pcs.Name, err)
	}
	return s
}

// kwokDeleted asks kwok's log whether kwok deleted a pod of ns on its own: a
// "Delete pod" of its name after the pod was made and within half a second
// before the monitor saw the deletion (or just after: kwok logs once its
// request has returned). kwok finishes a deletion by deleting the pod's name with grace 0
// and no UID precondition, from a job that can outlive the pod it was made
// for: when a new pod has taken the name, kwok deletes it (where a kubelet
// deletes by UID). The operator never deletes through kwok, and kwok's own
// finishing delete of the operator's, and of the pod that had the name
// before, come a delete delay (1 s) after the delete they finish.
func kwokDeleted(ns string) func(pod string, created, seen time.Time) (string, bool) {
	return func(pod string, created, seen time.Time) (string, bool) {
		from := seen.Add(-500 * time.Millisecond)
		if created.After(from) {
			from = created
		}
		// the log line may trail the watch event by a few milliseconds
		for deadline := time.Now().Add(500 * time.Millisecond); ; {
			at, ok, err := testCluster.KwokDeletedPod(ns, pod, from, seen.Add(300*time.Millisecond))
			if err == nil && ok {
				return fmt.Sprintf("kwok deleted it on its own (its log: Delete pod %s/%s at %s)", ns, pod, at.Format("15:04:05.000")), true
			}
			if err != nil || time.Now().After(deadline) {
				return "", false
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (s *scene) tearDown() {
	s.saveTimeline()
	if cluster.Keep() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pcs := &v1alpha1.PodCliqueSet{}
	pcs.Namespace, pcs.Name = s.ns, s.name
	if err := testCluster.Client.Delete(ctx, pcs); client.IgnoreNotFound(err) != nil {
		s.t.Errorf("delete PodCliqueSet %s: %v", s.name, err)
		return
	}
	for ctx.Err() == nil {
		pods, err := listPods(ctx, s.ns)
		if err == nil && len(pods) == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollInterval):
		}
	}
	s.t.Logf("the pods of %s/%s were not all gone after the PodCliqueSet was deleted", s.ns, s.name)
}

// saveTimeline writes the monitor's timeline and the namespace's Events to
// <dev dir>/timelines/<test>-<namespace>.txt, for reading after a run,
// passed or failed.
func (s *scene) saveTimeline() {
	if s.m == nil {
		return
	}
	dir := filepath.Join(testCluster.DevDir, "timelines")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Logf("saving the timeline: %v", err)
		return
	}
	path := filepath.Join(dir, strings.ReplaceAll(s.t.Name(), "/", "_")+"-"+s.ns+".txt")
	f, err := os.Create(path)
	if err != nil {
		s.t.Logf("saving the timeline: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "timeline of %s/%s; the monitor started at %s\n", s.ns, s.name, s.watched.Format("15:04:05.000000"))
	if err := s.m.WriteTimeline(f); err != nil {
		s.t.Logf("saving the timeline: %v", err)
	}
	// The Events of the namespace follow: they say who did what (the
	// scheduler, kwok, each of Lockstep's controllers).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var events eventsv1.EventList
	if err := testCluster.Client.List(ctx, &events, client.InNamespace(s.ns)); err != nil {
		s.t.Logf("saving the events: %v", err)
		return
	}
	slices.SortStableFunc(events.Items, func(a, b eventsv1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	fmt.Fprintf(f, "\nevents of namespace %s:\n", s.ns)
	for i := range events.Items {
		e := &events.Items[i]
		fmt.Fprintf(f, "%s %-30s %s/%s %s: %s\n", eventTime(e).Format("15:04:05.000000"), e.ReportingController,
			e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
	}
}

// eventTime is when an Event happened, whichever API wrote it.
func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// admit does to a PodCliqueSet what the apiserver and Lockstep's webhooks
// would: the CRD's defaults (through a dry run), the defaulting webhook, and
// validation (of the change, when old is given). Tests never send an object
// the webhook would refuse.
func admit(ctx context.Context, pcs, old *v1alpha1.PodCliqueSet) error {
	dry := pcs.DeepCopy()
	var err error
	if old == nil {
		err = testCluster.Client.Create(ctx, dry, client.DryRunAll)
	} else {
		err = testCluster.Client.Update(ctx, dry, client.DryRunAll)
	}
	if err != nil {
		return fmt.Errorf("dry run of PodCliqueSet %s: %w", pcs.Name, err)
	}
	pcs.Spec = dry.Spec
	pcs.Default()
	errs, _ := validation.ValidatePodCliqueSet(pcs)
	if old != nil {
		errs, _ = validation.ValidatePodCliqueSetUpdate(old, pcs)
	}
	if len(errs) > 0 {
		return fmt.Errorf("the webhook would refuse PodCliqueSet %s: %w", pcs.Name, errs.ToAggregate())
	}
	return nil
}

// parsePCS reads a PodCliqueSet manifest; unknown fields are an error.
func parsePCS(t *testing.T, manifest string) *v1alpha1.PodCliqueSet {
	t.Helper()
	pcs := &v1alpha1.PodCliqueSet{}
	if err := yaml.UnmarshalStrict([]byte(manifest), pcs); err != nil {
		t.Fatalf("parse PodCliqueSet manifest: %v", err)
	}
	return pcs
}

// loadExample reads a manifest of examples/.
func loadExample(t *testing.T, name string) *v1alpha1.PodCliqueSet { //nolint:unparam // each test names the example it runs
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return parsePCS(t, string(data))
}

// get reads the PodCliqueSet.
func (s *scene) get(ctx context.Context) (*v1alpha1.PodCliqueSet, error) {
	pcs := &v1alpha1.PodCliqueSet{}
	return pcs, testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.name}, pcs)
}

// update changes the PodCliqueSet spec as a user would (admitted, retried on
// conflicts) and returns the new object.
func (s *scene) update(mutate func(*v1alpha1.PodCliqueSetSpec)) *v1alpha1.PodCliqueSet {
	s.t.Helper()
	pcs, err := s.tryUpdate(s.t.Context(), mutate)
	if err != nil {
		s.t.Fatalf("update PodCliqueSet %s: %v", s.name, err)
	}
	return pcs
}

// tryUpdate is update that returns its error, for callers that retry (as
// the chaos tests do while the apiserver is down).
func (s *scene) tryUpdate(ctx context.Context, mutate func(*v1alpha1.PodCliqueSetSpec)) (*v1alpha1.PodCliqueSet, error) {
	var pcs *v1alpha1.PodCliqueSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := s.get(ctx)
		if err != nil {
			return err
		}
		pcs = old.DeepCopy()
		mutate(&pcs.Spec)
		if err := admit(ctx, pcs, old); err != nil {
			return err
		}
		return testCluster.Client.Update(ctx, pcs)
	})
	return pcs, err
}

// setImageTag points every container of every clique at tag.
func setImageTag(tag string) func(*v1alpha1.PodCliqueSetSpec) {
	return func(spec *v1alpha1.PodCliqueSetSpec) {
		for i := range spec.Template.Cliques {
			cs := spec.Template.Cliques[i].Template.Spec.Containers
			for j := range cs {
				repo, _, _ := strings.Cut(cs[j].Image, ":")
				cs[j].Image = repo + ":" + tag
			}
		}
	}
}

// deletePod deletes a pod by hand, announced to the monitor.
func (s *scene) deletePod(name string) {
	s.t.Helper()
	s.m.ExpectDeletion(name)
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = s.ns, name
	if err := testCluster.Client.Delete(s.t.Context(), pod); err != nil {
		s.t.Fatalf("delete pod %s: %v", name, err)
	}
}

// deleteGroupReplica deletes one scaling-group replica by hand, as a user
// would: its member PodCliques (their pods go with them). Announced to the
// monitor.
func (s *scene) deleteGroupReplica(replica int32, group string, groupReplica int32) {
	s.t.Helper()
	ctx := s.t.Context()
	var list v1alpha1.PodCliqueList
	if err := testCluster.Client.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{
		v1alpha1.LabelPodCliqueSet:                      s.name,
		v1alpha1.LabelPodCliqueSetReplicaIndex:          fmt.Sprint(replica),
		v1alpha1.LabelPodCliqueScalingGroup:             group,
		v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: fmt.Sprint(groupReplica),
	}); err != nil {
		s.t.Fatal(err)
	}
	if len(list.Items) == 0 {
		s.t.Fatalf("replica %d of scaling group %s (PCS replica %d) has no PodCliques", groupReplica, group, replica)
	}
	s.m.ExpectGroupReplicaDeletion(replica, group, groupReplica)
	for i := range list.Items {
		if err := testCluster.Client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			s.t.Fatalf("delete PodClique %s: %v", list.Items[i].Name, err)
		}
	}
}

// podCliqueName and scalingGroupName are the names the operator gives its
// children.
func (s *scene) podCliqueName(replica int, clique string) string {
	return naming.PodClique(s.name, replica, clique)
}

func (s *scene) scalingGroupName(replica int, group string) string {
	return naming.ScalingGroup(s.name, replica, group)
}

// podName is the name of the live pod at an index of a standalone clique. Under
// TerminationStarted a replacement made while its predecessor terminated has a
// name of its own, so the pod is found by its labels; without one, the index's
// own name.
func (s *scene) podName(replica int, clique string, index int) string {
	s.t.Helper()
	pclq := s.podCliqueName(replica, clique)
	var list corev1.PodList
	if err := testCluster.Client.List(s.t.Context(), &list, client.InNamespace(s.ns), client.MatchingLabels{
		v1alpha1.LabelPodClique: pclq, v1alpha1.LabelPodIndex: fmt.Sprint(index),
	}); err != nil {
		s.t.Fatalf("listing the pods of %s index %d: %v", pclq, index, err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			return p.Name
		}
	}
	return naming.Pod(pclq, index)
}

// await polls cond under the monitor until it holds. It returns an error when
// timeout passes (with the last state cond described) and fails the test at
// once when an invariant breaks. API errors are retried.
func (s *scene) await(what string, timeout time.Duration, cond func(ctx context.Context) (ok bool, state string, err error)) error {
	s.t.Helper()
	var state string
	var lastErr error
	err := s.m.Poll(s.t.Context(), timeout, func() (bool, error) {
		ctx, cancel := context.WithTimeout(s.t.Context(), 10*time.Second)
		defer cancel()
		ok, st, err := cond(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		state = st
		return ok, nil
	})
	var v *monitor.Violation
	switch {
	case errors.As(err, &v):
		s.t.Fatalf("while waiting for %s: %v", what, err)
	case err != nil:
		msg := fmt.Sprintf("%s: not reached within %s; last state:\n%s", what, timeout, state)
		if lastErr != nil {
			msg += fmt.Sprintf("\nlast error: %v", lastErr)
		}
		return errors.New(msg)
	}
	return nil
}

// mustAwait is await that fails the test on a timeout.
func (s *scene) mustAwait(what string, timeout time.Duration, cond func(ctx context.Context) (bool, string, error)) {
	s.t.Helper()
	if err := s.await(what, timeout, cond); err != nil {
		s.t.Fatal(err)
	}
}

// layout describes the pods of a PodCliqueSet compactly, for comparing with
// what a test expects. Keys are "<PCS replica>/<role>" ("0/frontend",
// "1/prefill"); values list the role's units by index with the version they
// run, the image tag of their pods ("0=v1 1=v2"). A unit is a pod of a
// standalone clique or a replica of a scaling group. A unit that is not whole
// and Ready is marked "?" ("2=v2?"); a group replica running two versions
// shows both ("1=v1+v2"). Terminating pods are left out.
type layout map[string]string

// everyReplica is the layout of n PCS replicas that all look like one.
func everyReplica(n int, roles layout) layout {
	out := layout{}
	for r := range n {
		for role, units := range roles {
			out[fmt.Sprintf("%d/%s", r, role)] = units
		}
	}
	return out
}

func (l layout) String() string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-14s %s\n", k, l[k])
	}
	return b.String()
}

// diff lists the roles where l differs from want.
func (l layout) diff(want layout) string {
	var out []string
	for k, w := range want {
		if g, ok := l[k]; !ok {
			out = append(out, fmt.Sprintf("%s: missing, want %q", k, w))
		} else if g != w {
			out = append(out, fmt.Sprintf("%s: %q, want %q", k, g, w))
		}
	}
	for k, g := range l {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: %q, want nothing", k, g))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// layoutOf computes the layout of pods under spec (which says how many pods a
// whole group replica has).
func layoutOf(spec *v1alpha1.PodCliqueSetSpec, pods []corev1.Pod) layout {
	type unit struct {
		versions []string
		ready    bool
		pods     map[string]int32 // member clique → live pods
	}
	byRole := map[string]map[int]*unit{}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		l := p.Labels
		replica, role, clique := l[v1alpha1.LabelPodCliqueSetReplicaIndex], l[v1alpha1.LabelClique], l[v1alpha1.LabelClique]
		idx := l[v1alpha1.LabelPodIndex]
		if g, ok := l[v1alpha1.LabelPodCliqueScalingGroup]; ok {
			role, idx = g, l[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		}
		index, err := strconv.Atoi(idx)
		if err != nil || replica == "" || role == "" {
			continue
		}
		key := replica + "/" + role
		if byRole[key] == nil {
			byRole[key] = map[int]*unit{}
		}
		u := byRole[key][index]
		if u == nil {
			u = &unit{ready: true, pods: map[string]int32{}}
			byRole[key][index] = u
		}
		if v := imageTag(p); !slices.Contains(u.versions, v) {
			u.versions = append(u.versions, v)
		}
		u.ready = u.ready && isReady(p)
		u.pods[clique]++
	}
	out := layout{}
	for key, units := range byRole {
		_, role, _ := strings.Cut(key, "/")
		indices := make([]int, 0, len(units))
		for i := range units {
			indices = append(indices, i)
		}
		slices.Sort(indices)
		parts := make([]string, 0, len(indices))
		for _, i := range indices {
			u := units[i]
			slices.Sort(u.versions)
			part := fmt.Sprintf("%d=%s", i, strings.Join(u.versions, "+"))
			if !u.ready || !whole(spec, role, u.pods) {
				part += "?"
			}
			parts = append(parts, part)
		}
		out[key] = strings.Join(parts, " ")
	}
	return out
}

// whole reports whether a unit of role has every pod the spec asks for.
func whole(spec *v1alpha1.PodCliqueSetSpec, role string, pods map[string]int32) bool {
	for _, g := range spec.Template.PodCliqueScalingGroups {
		if g.Name != role {
			continue
		}
		for _, name := range g.CliqueNames {
			if c := spec.Template.Clique(name); c == nil || pods[name] != c.Replicas {
				return false
			}
		}
		return true
	}
	return true
}

// imageTag is the tag of the pod's first container image: the version it runs.
func imageTag(p *corev1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	_, tag, _ := strings.Cut(p.Spec.Containers[0].Image, ":")
	return tag
}

// observed is one consistent-enough read of a PodCliqueSet and its pods.
type observed struct {
	pcs    *v1alpha1.PodCliqueSet
	pods   []corev1.Pod
	layout layout
}

// observe reads the PodCliqueSet, then its pods.
func (s *scene) observe(ctx context.Context) (*observed, error) {
	pcs, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := testCluster.Client.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: s.name}); err != nil {
		return nil, err
	}
	return &observed{pcs: pcs, pods: list.Items, layout: layoutOf(&pcs.Spec, list.Items)}, nil
}

// settled reports whether the operator has caught up with the latest spec and
// the rollout is complete: status observed the generation, every unit runs the
// update revision and is available.
func (o *observed) settled() bool {
	st := &o.pcs.Status
	c := apimeta.FindStatusCondition(st.Conditions, "Progressing")
	return st.ObservedGeneration == o.pcs.Generation && st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision &&
		c != nil && c.Reason == "RolloutComplete" && c.ObservedGeneration == o.pcs.Generation
}

// describe is the state for a failure message.
func (o *observed) describe() string {
	return fmt.Sprintf("%s%s", statusLine(o.pcs), o.layout)
}

// statusLine summarises a PodCliqueSet status on a few lines.
func statusLine(pcs *v1alpha1.PodCliqueSet) string {
	st := &pcs.Status
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d observed %d; replicas %d ready %d available %d updated %d; revisions current %s update %s\n",
		pcs.Generation, st.ObservedGeneration, st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas,
		st.CurrentRevision, st.UpdateRevision)
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// awaitLayout waits until the pods look like want and the PodCliqueSet says
// the rollout is complete.
func (s *scene) awaitLayout(what string, timeout time.Duration, want layout) *observed {
	s.t.Helper()
	var last *observed
	s.mustAwait(what, timeout, s.settledAt(want, &last))
	return last
}

// settledAt is the condition that the pods look like want and the
// PodCliqueSet says the rollout is complete; it keeps the last observation in
// last.
func (s *scene) settledAt(want layout, last **observed) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		*last = o
		d := o.layout.diff(want)
		return d == "" && o.settled(), o.describe() + "differences: " + d, nil
	}
}

// templateHashes are the pod template hashes the operator labels the pods of
// each clique with, for spec.
func templateHashes(t *testing.T, pcs *v1alpha1.PodCliqueSet) map[string]string {
	t.Helper()
	p := pcs.DeepCopy()
	p.Default()
	out := map[string]string{}
	for i := range p.Spec.Template.Cliques {
		c := &p.Spec.Template.Cliques[i]
		h, err := revision.CliqueHash(c)
		if err != nil {
			t.Fatal(err)
		}
		out[c.Name] = h
	}
	return out
}

// indicesWithoutHoles checks that every PodClique of the PodCliqueSet has
// exactly the pods 0 .. replicas-1 (terminating pods, and PodCliques being
// deleted, aside).
func (s *scene) indicesWithoutHoles(ctx context.Context) error {
	var cliques v1alpha1.PodCliqueList
	if err := testCluster.Client.List(ctx, &cliques, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: s.name}); err != nil {
		return err
	}
	var problems []string
	for _, pc := range cliques.Items {
		if pc.DeletionTimestamp != nil {
			continue // on its way out with its pods: a rollout completes without waiting for it
		}
		var pods corev1.PodList
		if err := testCluster.Client.List(ctx, &pods, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPodClique: pc.Name}); err != nil {
			return err
		}
		var got []int
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp != nil {
				continue
			}
			idx, err := strconv.Atoi(pods.Items[i].Labels[v1alpha1.LabelPodIndex])
			if err != nil {
				return fmt.Errorf("pod %s: bad index label: %w", pods.Items[i].Name, err)
			}
			got = append(got, idx)
		}
		slices.Sort(got)
		want := make([]int, pc.Spec.Replicas)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("PodClique %s has pod indices %v, want %v", pc.Name, got, want))
		}
	}
	if len(cliques.Items) == 0 {
		return errors.New("no PodCliques")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
