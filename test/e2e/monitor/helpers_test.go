package monitor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// The unit tests drive a recorder by hand: a world plays the operator, the
// kubelet and the test, one step at a time on a fake clock, writing the labels
// the operator would write.

const pcsName = "demo"

type world struct {
	t    *testing.T
	rec  *recorder
	now  time.Time
	pcs  *v1alpha1.PodCliqueSet
	pods map[string]*corev1.Pod
	// rv numbers the changes, as etcd does: every pod event and PodClique
	// deletion takes the next one.
	rv uint64
}

func (w *world) nextRV() string {
	w.rv++
	return fmt.Sprint(w.rv)
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newWorld(t *testing.T, spec v1alpha1.PodCliqueSetSpec) *world {
	w := &world{t: t, rec: newRecorder(Options{}.withDefaults(), epoch), now: epoch, pods: map[string]*corev1.Pod{}}
	w.pcs = &v1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: pcsName, Namespace: "ns", Generation: 1}, Spec: spec}
	w.pcs.Status.ObservedGeneration = 1
	w.rec.observeSet(w.now, w.pcs.DeepCopy())
	return w
}

func (w *world) run(steps ...step) {
	for _, s := range steps {
		s(w)
	}
}

func (w *world) timelineText() string {
	var b strings.Builder
	_ = writeEvents(&b, w.rec.timeline.start, w.rec.timeline.dropped, w.rec.timeline.events())
	return b.String()
}

// step is one thing that happens in a scenario; every step takes a second.
type step func(w *world)

func steps(ss ...step) step {
	return func(w *world) {
		for _, s := range ss {
			s(w)
		}
	}
}

func wait(d time.Duration) step {
	return func(w *world) { w.now = w.now.Add(d) }
}

// pod names one pod by its place in the PodCliqueSet.
type pod struct {
	replica      int32
	group        string
	groupReplica int32
	clique       string
	index        int32
	// second names a second pod at the index, beside the first (see beside)
	second bool
}

// beside is a second pod at p's index, under a name of its own, as the
// operator makes a replacement under TerminationStarted or a surge pod under
// surgePlacement ReplacedIndex.
func (p pod) beside() pod {
	p.second = true
	return p
}

// sp is a pod of a standalone clique.
func sp(replica int32, clique string, index int32) pod {
	return pod{replica: replica, groupReplica: -1, clique: clique, index: index}
}

// gp is a pod of a member clique of a scaling-group replica.
func gp(replica int32, group string, groupReplica int32, clique string, index int32) pod {
	return pod{replica: replica, group: group, groupReplica: groupReplica, clique: clique, index: index}
}

func (p pod) name() string {
	name := naming.Pod(p.cliqueName(), int(p.index))
	if p.second {
		name += "-r"
	}
	return name
}

// cliqueName is the name of the PodClique the pod belongs to.
func (p pod) cliqueName() string {
	if p.group == "" {
		return naming.PodClique(pcsName, int(p.replica), p.clique)
	}
	return naming.GroupPodClique(naming.ScalingGroup(pcsName, int(p.replica), p.group), int(p.groupReplica), p.clique)
}

func (p pod) labels(image string) map[string]string {
	l := map[string]string{
		v1alpha1.LabelPodClique:                p.cliqueName(),
		v1alpha1.LabelManagedBy:                v1alpha1.ManagedByValue,
		v1alpha1.LabelPodCliqueSet:             pcsName,
		v1alpha1.LabelPodCliqueSetReplicaIndex: fmt.Sprint(p.replica),
		v1alpha1.LabelClique:                   p.clique,
		v1alpha1.LabelPodIndex:                 fmt.Sprint(p.index),
		v1alpha1.LabelPodCliqueSetRevision:     pcsName + "-" + image,
		v1alpha1.LabelTemplateHash:             hashOf(p.clique, image),
	}
	if p.group != "" {
		l[v1alpha1.LabelPodCliqueScalingGroup] = p.group
		l[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex] = fmt.Sprint(p.groupReplica)
	}
	return l
}

// observe delivers a pod's change, as the Monitor's pod handler does.
func (w *world) observe(p *corev1.Pod) {
	p.ResourceVersion = w.nextRV()
	w.pods[p.Name] = p
	w.rec.settleDooms(w.now, resourceVersion(p.ResourceVersion))
	w.rec.observePod(w.now, p.DeepCopy(), false)
}

func (w *world) pod(p pod) *corev1.Pod {
	got, ok := w.pods[p.name()]
	if !ok {
		w.t.Fatalf("scenario error: no pod %s", p.name())
	}
	return got
}

// create makes a pod from the clique's template at image, as the operator would.
func create(p pod, image string) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		w.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: p.name(), Namespace: "ns", Labels: p.labels(image), CreationTimestamp: metav1.NewTime(w.now),
		}})
	}
}

// createSurge makes a surge pod of a standalone clique at image, labelled as
// the operator labels one.
func createSurge(p pod, image string) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		l := p.labels(image)
		l[v1alpha1.LabelSurge] = "true"
		w.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name(), Namespace: "ns", Labels: l, CreationTimestamp: metav1.NewTime(w.now)}})
	}
}

// replacementOf creates a second pod at p's index on v2, under a name of its
// own, as the operator does under TerminationStarted while p terminates.
func replacementOf(p pod) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		w.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: p.beside().name(), Namespace: "ns", Labels: p.labels("v2"), CreationTimestamp: metav1.NewTime(w.now),
		}})
	}
}

func ready(p pod) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		got := w.pod(p)
		got.Spec.NodeName = "node-1"
		got.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(w.now)}}
		w.observe(got)
	}
}

func unready(p pod) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		got := w.pod(p)
		got.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(w.now)}}
		w.observe(got)
	}
}

// del starts a graceful deletion, as the operator (or a test) would.
func del(p pod) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		got := w.pod(p)
		grace := int64(30)
		got.DeletionTimestamp = new(metav1.NewTime(w.now.Add(30 * time.Second)))
		got.DeletionGracePeriodSeconds = &grace
		w.observe(got)
	}
}

// within runs step s gap after the previous one (instead of its second).
func within(gap time.Duration, s step) step {
	return func(w *world) {
		w.now = w.now.Add(gap - time.Second)
		s(w)
	}
}

// nodeAgentDeletes makes the node agent own up to deleting pod p.
func nodeAgentDeletes(p pod) step {
	return func(w *world) {
		w.rec.opts.DeletedByNodeAgent = func(name string, _, _ time.Time) (string, bool) {
			return "its own log", name == p.name()
		}
	}
}

// failsJustBefore: pod f turns unready gap before the operator deletes pod d.
func failsJustBefore(f, d pod, gap time.Duration) step {
	return func(w *world) {
		unready(f)(w)
		w.now = w.now.Add(gap - time.Second) // del adds its second
		del(d)(w)
	}
}

// recoversJustBefore: pod r turns ready gap before the operator deletes pod d.
func recoversJustBefore(r, d pod, gap time.Duration) step {
	return func(w *world) {
		ready(r)(w)
		w.now = w.now.Add(gap - time.Second) // del adds its second
		del(d)(w)
	}
}

// gone is the end of a deletion: the pod leaves the apiserver.
func gone(p pod) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		delete(w.pods, p.name())
		w.rec.settleDooms(w.now, resourceVersion(w.nextRV()))
		w.rec.forgetPod(w.now, p.name(), "")
	}
}

// deleteCliqueOf begins the deletion of the PodClique pod p belongs to, as the
// operator's foreground delete does; the pods stay until the garbage
// collector deletes them (del, gone).
func deleteCliqueOf(p pod) step { return deleteCliqueAhead(p, 0) }

// deleteCliqueAhead is deleteCliqueOf seen by the monitor before the pod
// watch delivered the ahead pod changes made before the deletion: those come
// in the steps after it.
func deleteCliqueAhead(p pod, ahead uint64) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		name := p.cliqueName()
		pc := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: p.labels("")}}
		if _, known := w.rec.snap.cliques[name]; !known {
			w.rec.observeClique(w.now, pc.DeepCopy(), true)
		}
		pc.DeletionTimestamp = new(metav1.NewTime(w.now))
		pc.ResourceVersion = fmt.Sprint(w.rv + ahead + 1)
		w.rec.observeClique(w.now, pc, false)
	}
}

// removeCliqueOf deletes the PodClique pod p belongs to in the background, as
// another writer's plain delete does: it is gone at once, its pods stay until
// the garbage collector deletes them.
func removeCliqueOf(p pod) step {
	return func(w *world) {
		w.now = w.now.Add(time.Second)
		name := p.cliqueName()
		if _, known := w.rec.snap.cliques[name]; !known {
			w.rec.observeClique(w.now, &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: p.labels("")}}, true)
		}
		w.rec.forgetClique(w.now, name, w.nextRV())
	}
}

// announceClique is the test's ExpectDeletionOf a PodClique's pods.
func announceClique(p pod) step {
	return func(w *world) {
		sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodClique: p.cliqueName()})
		w.rec.announce(w.now, expectedDeletion{selector: sel}, sel.String())
	}
}

// replace deletes a pod and creates it again at image, ready.
func replace(p pod, image string) step {
	return steps(del(p), gone(p), create(p, image), ready(p))
}

// announce is the test's ExpectDeletion.
func announce(p pod) step {
	return func(w *world) {
		w.rec.announce(w.now, expectedDeletion{name: p.name()}, "pod/"+p.name())
	}
}

// announceGroupReplica is the test's ExpectGroupReplicaDeletion.
func announceGroupReplica(replica int32, group string, groupReplica int32) step {
	return func(w *world) {
		sel := labels.SelectorFromSet(labels.Set{
			v1alpha1.LabelPodCliqueSetReplicaIndex:          fmt.Sprint(replica),
			v1alpha1.LabelPodCliqueScalingGroup:             group,
			v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: fmt.Sprint(groupReplica),
		})
		w.rec.announce(w.now, expectedDeletion{selector: sel}, sel.String())
	}
}

// groupPods are the pods of one scaling-group replica under the current spec.
func (w *world) groupPods(replica int32, group string, groupReplica int32) []pod {
	var out []pod
	for _, g := range w.pcs.Spec.Template.PodCliqueScalingGroups {
		if g.Name != group {
			continue
		}
		for _, c := range g.CliqueNames {
			for i := range w.pcs.Spec.Template.Clique(c).Replicas {
				out = append(out, gp(replica, group, groupReplica, c, i))
			}
		}
	}
	return out
}

// replicaPods are the pods of one PCS replica under the current spec.
func (w *world) replicaPods(replica int32) []pod {
	var out []pod
	t := &w.pcs.Spec.Template
	for _, c := range t.Cliques {
		if t.ScalingGroupOf(c.Name) == nil {
			for i := range c.Replicas {
				out = append(out, sp(replica, c.Name, i))
			}
		}
	}
	for _, g := range t.PodCliqueScalingGroups {
		for j := range g.Replicas {
			out = append(out, w.groupPods(replica, g.Name, j)...)
		}
	}
	return out
}

// eachPod applies a pod step to every pod pods(w) lists.
func eachPod(pods func(w *world) []pod, f func(pod) step) step {
	return func(w *world) {
		for _, p := range pods(w) {
			f(p)(w)
		}
	}
}

func inGroupReplica(replica int32, group string, groupReplica int32) func(*world) []pod {
	return func(w *world) []pod { return w.groupPods(replica, group, groupReplica) }
}

func inReplica(replica int32) func(*world) []pod {
	return func(w *world) []pod { return w.replicaPods(replica) }
}

func at(image string) func(pod) step {
	return func(p pod) step { return create(p, image) }
}

// upReplica creates every pod of a PCS replica at image and makes them ready.
func upReplica(replica int32, image string) step {
	return steps(eachPod(inReplica(replica), at(image)), eachPod(inReplica(replica), ready))
}

// upGroupReplica creates every pod of a scaling-group replica at image, ready.
func upGroupReplica(replica int32, group string, groupReplica int32, image string) step {
	in := inGroupReplica(replica, group, groupReplica)
	return steps(eachPod(in, at(image)), eachPod(in, ready))
}

// downGroupReplica deletes every pod of a scaling-group replica until gone.
func downGroupReplica(replica int32, group string, groupReplica int32) step {
	in := inGroupReplica(replica, group, groupReplica)
	return steps(eachPod(in, del), eachPod(in, gone))
}

// replaceGroupReplica recreates a scaling-group replica at image, ready.
func replaceGroupReplica(replica int32, group string, groupReplica int32, image string) step {
	return steps(downGroupReplica(replica, group, groupReplica), upGroupReplica(replica, group, groupReplica, image))
}

// change edits the spec; the operator sees it at once and the previous spec
// stops counting (the clock passes the grace).
func change(f func(*v1alpha1.PodCliqueSetSpec)) step {
	return steps(changeUnseen(f), operatorSees(), wait(3*time.Second))
}

// changeUnseen edits the spec without the operator reporting it has seen it.
func changeUnseen(f func(*v1alpha1.PodCliqueSetSpec)) step {
	return func(w *world) {
		f(&w.pcs.Spec)
		w.pcs.Generation++
		w.rec.observeSet(w.now, w.pcs.DeepCopy())
	}
}

// operatorSees is the PodCliqueSet status reporting the newest generation.
func operatorSees() step {
	return func(w *world) {
		w.pcs.Status.ObservedGeneration = w.pcs.Generation
		w.rec.observeSet(w.now, w.pcs.DeepCopy())
	}
}

func rollTo(image string) step {
	return change(toImage(image))
}

func toImage(image string) func(*v1alpha1.PodCliqueSetSpec) {
	return func(s *v1alpha1.PodCliqueSetSpec) {
		for i := range s.Template.Cliques {
			s.Template.Cliques[i].Template = podTemplate(s.Template.Cliques[i].Name, image)
		}
	}
}

func podTemplate(clique, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: clique, Image: clique + ":" + image}}}}
}

func hashOf(clique, image string) string {
	t := podTemplate(clique, image)
	h, err := revision.PodTemplateHash(&t, "")
	if err != nil {
		panic(err)
	}
	return h
}

// Spec builders: every template starts at image v1.

func clique(name string, replicas int32) v1alpha1.PodCliqueTemplateSpec {
	return v1alpha1.PodCliqueTemplateSpec{Name: name, Replicas: replicas, Template: podTemplate(name, "v1")}
}

func withLimits(c v1alpha1.PodCliqueTemplateSpec, maxSurge, maxUnavailable string) v1alpha1.PodCliqueTemplateSpec {
	c.UpdateStrategy = limits(maxSurge, maxUnavailable)
	return c
}

func withMinAvailable(c v1alpha1.PodCliqueTemplateSpec, n int32) v1alpha1.PodCliqueTemplateSpec {
	c.MinAvailable = &n
	return c
}

func limits(maxSurge, maxUnavailable string) *v1alpha1.ComponentUpdateStrategy {
	s, u := intstr.Parse(maxSurge), intstr.Parse(maxUnavailable)
	return &v1alpha1.ComponentUpdateStrategy{MaxSurge: &s, MaxUnavailable: &u}
}

func group(name string, replicas, minAvailable int32, members ...string) v1alpha1.PodCliqueScalingGroupConfig {
	return v1alpha1.PodCliqueScalingGroupConfig{Name: name, Replicas: replicas, MinAvailable: &minAvailable, CliqueNames: members}
}

func groupWithLimits(g v1alpha1.PodCliqueScalingGroupConfig, maxSurge, maxUnavailable string) v1alpha1.PodCliqueScalingGroupConfig {
	g.UpdateStrategy = limits(maxSurge, maxUnavailable)
	return g
}

func setSpec(replicas int32, cliques []v1alpha1.PodCliqueTemplateSpec, groups ...v1alpha1.PodCliqueScalingGroupConfig) v1alpha1.PodCliqueSetSpec {
	return v1alpha1.PodCliqueSetSpec{Replicas: &replicas, Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques, PodCliqueScalingGroups: groups}}
}

func recreate(s v1alpha1.PodCliqueSetSpec, maxSurge, maxUnavailable string) v1alpha1.PodCliqueSetSpec {
	su, un := intstr.Parse(maxSurge), intstr.Parse(maxUnavailable)
	s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.ReplicaRecreateStrategyType,
		RollingUpdate: &v1alpha1.PodCliqueSetRollingUpdate{MaxSurge: &su, MaxUnavailable: &un}}
	return s
}

func onDelete(s v1alpha1.PodCliqueSetSpec) v1alpha1.PodCliqueSetSpec {
	s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.OnDeleteStrategyType}
	return s
}

func roleSteps(s v1alpha1.PodCliqueSetSpec, pairs ...string) v1alpha1.PodCliqueSetSpec {
	ru := &v1alpha1.RoleUpgrade{}
	for i := 0; i+1 < len(pairs); i += 2 {
		ru.Steps = append(ru.Steps, v1alpha1.RoleUpgradeStep{Role: pairs[i], UpdateTo: intstr.Parse(pairs[i+1])})
	}
	s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.RollingUpdateStrategyType, RoleUpgrade: ru}
	return s
}

func withPartition(s v1alpha1.PodCliqueSetSpec, partition int32) v1alpha1.PodCliqueSetSpec {
	s.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: &partition}
	return s
}

// scenario is a sequence that must hold every invariant, optionally followed by
// the steps that break one: the check must fire at the breaking step, not before.
type scenario struct {
	name     string
	spec     v1alpha1.PodCliqueSetSpec
	steps    []step
	breaking []step
	want     Invariant // broken by breaking
}

func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			w := newWorld(t, sc.spec)
			w.run(sc.steps...)
			if len(w.rec.violations) > 0 {
				t.Fatalf("broken before the breaking steps:\n%s", w.rec.violations[0].Report())
			}
			if len(sc.breaking) == 0 {
				return
			}
			w.run(sc.breaking...)
			if len(w.rec.violations) == 0 {
				t.Fatalf("want %s broken, nothing was; timeline:\n%s", sc.want, w.timelineText())
			}
			if got := w.rec.violations[0]; got.Invariant != sc.want {
				t.Fatalf("want %s broken first, got:\n%s", sc.want, got.Report())
			}
		})
	}
}
