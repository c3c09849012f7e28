//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// Regression tests for failures seen in operators of this kind.

// kwok's per-pod ready delay (docs/local-cluster.md): a pod waits that long
// after being bound before it turns Ready.
const readyDelayAnnotation = "pod-ready.stage.kwok.x-k8s.io/delay"

// pairPCS is a clique of two pods of which one is enough. Its pods start with
// a ready delay of an hour: the test lets one of them through by hand, the
// other stays not Ready.
const pairPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: pair
spec:
  replicas: 1
  template:
    cliques:
    - name: server
      replicas: 2
      minAvailable: 1
      template:
        metadata:
          annotations:
            pod-ready.stage.kwok.x-k8s.io/delay: 1h
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
`

// A clique with replicas 2 and minAvailable 1 whose one old pod is not Ready
// never has both pods down during an update: the not-Ready pod is replaced
// first (without spending the budget), the Ready one only after its
// replacement is Ready.
func TestRegression_MinAvailableOneNeverLosesBothPods(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, pairPCS))
	ctx := t.Context()
	s.mustAwait("both pods to be bound", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		bound := 0
		for i := range o.pods {
			if o.pods[i].Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 2, o.describe(), nil
	})
	// Letting pod 0 through: kwok plays a pod's next stage again, with the
	// delay it now asks for, whenever the pod changes.
	pod := &corev1.Pod{}
	if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.podName(0, "server", 0)}, pod); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Annotations[readyDelayAnnotation] = "10ms"
	if err := testCluster.Client.Patch(ctx, pod, patch); err != nil {
		t.Fatal(err)
	}
	s.mustAwait("pod 0 Ready, pod 1 not, the PodCliqueSet Available", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		return o.layout.diff(layout{"0/server": "0=v1 1=v1?"}) == "" && o.pcs.Status.AvailableReplicas == 1 &&
			o.pcs.Status.ObservedGeneration == o.pcs.Generation, o.describe(), nil
	})

	start := time.Now()
	pcs := s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
		setImageTag("v2")(spec)
		delete(spec.Template.Clique("server").Template.Annotations, readyDelayAnnotation)
	})
	s.awaitRollout("the update to finish", 2*time.Minute, layout{"0/server": "0=v2 1=v2"})
	events := s.m.Timeline()

	if n := leastAvailable(events, &pcs.Spec, start)["0/server"]; n < 1 {
		t.Errorf("the clique had %d available pods at one moment of the update, want at least 1", n)
	}
	deleted := operatorDeletions(t, events, start)
	if got := fmt.Sprint(indicesOf(deleted)); got != "[1 0]" {
		t.Errorf("the operator deleted server pods %s, want [1 0]: the not-Ready pod first, the Ready one once its replacement is Ready", got)
	}
}

// threeServersPCS has a standalone clique and a scaling group, both updated
// one unit at a time.
const threeServersPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: retarget
spec:
  replicas: 1
  template:
    cliques:
    - name: server
      replicas: 3
      template: &pod
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
    - name: shard-leader
      replicas: 1
      template: *pod
    - name: shard-worker
      replicas: 1
      template: *pod
    podCliqueScalingGroups:
    - name: shard
      cliqueNames: [shard-leader, shard-worker]
      replicas: 2
`

// A second spec change in the middle of a rollout retargets it: the rollout
// completes on the newest revision, pods of the superseded one included.
func TestRegression_SecondSpecChangeMidRolloutFinishesOnTheNewest(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, threeServersPCS))
	first := s.awaitLayout("the PodCliqueSet to become Available", time.Minute, layout{"0/server": "0=v1 1=v1 2=v1", "0/shard": "0=v1 1=v1"})
	rev1 := first.pcs.Status.UpdateRevision

	s.update(setImageTag("v2"))
	s.mustAwait("the rollout to v2 to be under way", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		servers := o.layout["0/server"]
		return strings.Contains(servers, "=v2") && strings.Contains(servers, "=v1"), o.describe(), nil
	})
	mid, err := s.observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rev2 := mid.pcs.Status.UpdateRevision
	t.Logf("second change with the pods at %s", mid.layout)

	pcs := s.update(setImageTag("v3"))
	var observedAt time.Time
	s.mustAwait("the operator to take the second change", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		observedAt = time.Now()
		return o.pcs.Status.ObservedGeneration >= pcs.Generation, o.describe(), nil
	})
	end := s.awaitRollout("the rollout to finish on v3", 2*time.Minute, layout{"0/server": "0=v3 1=v3 2=v3", "0/shard": "0=v3 1=v3"})

	st := &end.pcs.Status
	if st.UpdateRevision == rev1 || st.UpdateRevision == rev2 || rev1 == rev2 {
		t.Errorf("revisions v1 %s, v2 %s, v3 %s: want three different ones", rev1, rev2, st.UpdateRevision)
	}
	hashes := templateHashes(t, pcs)
	for i := range end.pods {
		p := &end.pods[i]
		if h := p.Labels[v1alpha1.LabelTemplateHash]; h != hashes[p.Labels[v1alpha1.LabelClique]] {
			t.Errorf("pod %s has template hash %s, want v3's %s", p.Name, h, hashes[p.Labels[v1alpha1.LabelClique]])
		}
	}
	// Once the operator has the newest spec (and a moment for children in
	// the middle of a step), nothing more is made at the superseded revision.
	for _, e := range s.m.Timeline() {
		if e.Kind == monitor.PodCreated && e.Time.After(observedAt.Add(2*time.Second)) && e.Revision == rev2 {
			t.Errorf("pod %s was created at the superseded revision %s %s after the operator took the newest spec",
				e.Name, rev2, e.Time.Sub(observedAt).Round(10*time.Millisecond))
		}
	}
}

// awaitRollout waits for the pods to look like want and the PodCliqueSet to
// say the rollout is complete, and fails the test if it ever says so before
// the pods are there: a rollout is not complete until its replacements are
// Ready.
func (s *scene) awaitRollout(what string, timeout time.Duration, want layout) *observed {
	s.t.Helper()
	var last *observed
	s.mustAwait(what, timeout, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		last = o
		d := o.layout.diff(want)
		if o.settled() && d != "" {
			s.t.Fatalf("the PodCliqueSet reports the rollout complete while its pods differ: %s\n%s", d, o.describe())
		}
		return d == "" && o.settled(), o.describe() + "differences: " + d, nil
	})
	return last
}

// scalePCS has a clique and a scaling group to scale at every level. Its
// short progress deadline would show a scaling taken for a rollout that
// never ends.
const scalePCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: scale
spec:
  replicas: 1
  progressDeadlineSeconds: 15
  template:
    cliques:
    - name: frontend
      replicas: 2
      minAvailable: 1
      template: &pod
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
    - name: shard-leader
      replicas: 1
      template: *pod
    - name: shard-worker
      replicas: 1
      template: *pod
    podCliqueScalingGroups:
    - name: shard
      cliqueNames: [shard-leader, shard-worker]
      replicas: 1
`

// Changing replicas, again and again and at every level (PodCliqueSet, clique,
// scaling group, the /scale subresources an HPA would use), never starts a
// rollout: the revision stays, every pod keeps its template, and the only
// pods deleted are those the scale-in removes.
func TestRegression_ReplicaChangesNeverStartARollout(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, scalePCS))
	first := s.awaitLayout("the PodCliqueSet to become Available", time.Minute, everyReplica(1, layout{"frontend": "0=v1 1=v1", "shard": "0=v1"}))
	revision := first.pcs.Status.UpdateRevision
	hashes := templateHashes(t, first.pcs)

	steps := []struct {
		name string
		do   func(s *scene)
		want layout
	}{{
		name: "PodCliqueSet out to 2",
		do:   func(s *scene) { s.update(func(spec *v1alpha1.PodCliqueSetSpec) { spec.Replicas = new(int32(2)) }) },
		want: everyReplica(2, layout{"frontend": "0=v1 1=v1", "shard": "0=v1"}),
	}, {
		name: "frontend out to 3",
		do:   func(s *scene) { s.update(cliqueReplicas("frontend", 3)) },
		want: everyReplica(2, layout{"frontend": "0=v1 1=v1 2=v1", "shard": "0=v1"}),
	}, {
		name: "shard out to 2",
		do:   func(s *scene) { s.update(groupReplicas("shard", 2)) },
		want: everyReplica(2, layout{"frontend": "0=v1 1=v1 2=v1", "shard": "0=v1 1=v1"}),
	}, {
		name: "replica 0's frontend to 4 through its /scale",
		do:   func(s *scene) { s.scale(&v1alpha1.PodClique{}, s.podCliqueName(0, "frontend"), 4) },
		want: layout{"0/frontend": "0=v1 1=v1 2=v1 3=v1", "0/shard": "0=v1 1=v1", "1/frontend": "0=v1 1=v1 2=v1", "1/shard": "0=v1 1=v1"},
	}, {
		name: "frontend in to 1 (the template wins over /scale again)",
		do:   func(s *scene) { s.update(cliqueReplicas("frontend", 1)) },
		want: everyReplica(2, layout{"frontend": "0=v1", "shard": "0=v1 1=v1"}),
	}, {
		name: "PodCliqueSet in to 1 through its /scale",
		do:   func(s *scene) { s.scale(&v1alpha1.PodCliqueSet{}, s.name, 1) },
		want: everyReplica(1, layout{"frontend": "0=v1", "shard": "0=v1 1=v1"}),
	}, {
		name: "shard in to 1",
		do:   func(s *scene) { s.update(groupReplicas("shard", 1)) },
		want: everyReplica(1, layout{"frontend": "0=v1", "shard": "0=v1"}),
	}, {
		name: "frontend out to 2 and PodCliqueSet out to 2 at once",
		do: func(s *scene) {
			s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
				spec.Replicas = new(int32(2))
				cliqueReplicas("frontend", 2)(spec)
			})
		},
		want: everyReplica(2, layout{"frontend": "0=v1 1=v1", "shard": "0=v1"}),
	}}
	for _, step := range steps {
		start := time.Now()
		step.do(s)
		var o *observed
		if err := s.await(step.name, 40*time.Second, s.settledAt(step.want, &o)); err != nil {
			// The later steps still run: each expects a whole state of its own.
			t.Errorf("step %q: %v", step.name, err)
		}
		if o == nil {
			continue
		}
		if st := &o.pcs.Status; st.UpdateRevision != revision || st.CurrentRevision != revision {
			t.Errorf("step %q: revisions current %s update %s, want both to stay %s", step.name, st.CurrentRevision, st.UpdateRevision, revision)
		}
		if st := &o.pcs.Status; st.UpdatedReplicas != *o.pcs.Spec.Replicas {
			t.Errorf("step %q: updatedReplicas %d of %d, want every replica counted as updated; %s", step.name, st.UpdatedReplicas, *o.pcs.Spec.Replicas, statusLine(o.pcs))
		}
		for i := range o.pods {
			p := &o.pods[i]
			if h := p.Labels[v1alpha1.LabelTemplateHash]; h != hashes[p.Labels[v1alpha1.LabelClique]] {
				t.Errorf("step %q: pod %s has template hash %s, want %s", step.name, p.Name, h, hashes[p.Labels[v1alpha1.LabelClique]])
			}
		}
		// A deleted pod's unit must be gone from the layout: a scale-in, not a
		// replacement.
		for _, e := range operatorDeletions(t, s.m.Timeline(), start) {
			if unitKept(step.want, e) {
				t.Errorf("step %q: the operator deleted pod %s, whose unit is kept", step.name, e.Name)
			}
		}
	}

	var events eventsv1.EventList
	if err := testCluster.Client.List(t.Context(), &events, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	// Nor does any Event narrate a rollout step.
	for _, e := range events.Items {
		if e.Reason == "RolloutStarted" || e.Reason == "ReplicaUpdating" || e.Reason == "RoleStepStarted" {
			t.Errorf("event %s on %s at %s: %s", e.Reason, e.Regarding.Name, eventTime(&e).Format("15:04:05.000"), e.Note)
		}
	}
}

// unitKept reports whether the unit a pod event belongs to is in want.
func unitKept(want layout, e monitor.Event) bool {
	role, index := e.Clique, e.Index
	if e.Group != "" {
		role, index = e.Group, e.GroupReplica
	}
	units, ok := want[fmt.Sprintf("%d/%s", e.Replica, role)]
	if !ok {
		return false
	}
	for _, u := range strings.Fields(units) {
		if i, _, _ := strings.Cut(u, "="); i == strconv.Itoa(int(index)) {
			return true
		}
	}
	return false
}

// groupReplicas sets the replicas of a scaling group of the template.
func groupReplicas(group string, n int32) func(*v1alpha1.PodCliqueSetSpec) {
	return func(spec *v1alpha1.PodCliqueSetSpec) {
		for i := range spec.Template.PodCliqueScalingGroups {
			if spec.Template.PodCliqueScalingGroups[i].Name == group {
				spec.Template.PodCliqueScalingGroups[i].Replicas = n
			}
		}
	}
}

// scale sets the replicas of an object through its /scale subresource, as an
// autoscaler does.
func (s *scene) scale(obj client.Object, name string, replicas int32) {
	s.t.Helper()
	obj.SetNamespace(s.ns)
	obj.SetName(name)
	sc := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if err := testCluster.Client.SubResource("scale").Update(s.t.Context(), obj, client.WithSubResourceBody(sc)); err != nil {
		s.t.Fatalf("scale %T %s to %d: %v", obj, name, replicas, err)
	}
}
