//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// onDeletePCS is examples/ondelete-training.yaml made smaller, with a scaling
// group of leader and worker shards next to the standalone workers.
const onDeletePCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: training
spec:
  replicas: 1
  updateStrategy:
    type: OnDelete
  template:
    cliques:
    - name: worker
      replicas: 4
      minAvailable: 2
      template: &gpuPod
        spec:
          containers:
          - name: trainer
            image: lockstep-examples/trainer:v1
            resources: {limits: {nvidia.com/gpu: 1}}
    - name: shard-leader
      replicas: 1
      template: *gpuPod
    - name: shard-worker
      replicas: 1
      template: *gpuPod
    podCliqueScalingGroups:
    - name: shard
      cliqueNames: [shard-leader, shard-worker]
      replicas: 2
`

// onDeleteStep is one step of the OnDelete test plan: an action, then the state
// it must lead to.
type onDeleteStep struct {
	name string
	do   func(s *scene)
	want layout
	// updated is status.updatedReplicas: of the PodClique "worker", of the
	// PodCliqueScalingGroup "shard" and of the PodCliqueSet ("set").
	updated map[string]int32
	// current and update are the PodCliqueSet's status revisions, named by the
	// image version of the template each was made from.
	current, update string
	progressing     string // reason of the PodCliqueSet's Progressing condition
	// deletes are the pods the operator itself deletes in this step, as
	// "<clique>-<index>" (the test's own deletions aside).
	deletes []string
	// check is anything more to verify once the state is reached.
	check func(ctx context.Context, s *scene) error
}

// OnDelete, step by step: a template change deletes
// nothing; a pod deleted by hand comes back on the new template; a scale-in
// removes outdated pods first; a scaling-group replica deleted by hand comes
// back new; status.updatedReplicas is right at every level throughout.
func TestOnDelete_UpdatesOnlyWhatIsDeletedAndScalesInOutdatedFirst(t *testing.T) {
	s := newScene(t, 2, parsePCS(t, onDeletePCS))
	steps := []onDeleteStep{{
		name:    "create",
		want:    layout{"0/worker": "0=v1 1=v1 2=v1 3=v1", "0/shard": "0=v1 1=v1"},
		updated: map[string]int32{"worker": 4, "shard": 2, "set": 1},
		current: "v1", update: "v1", progressing: "RolloutComplete",
	}, {
		name:    "change the template",
		do:      func(s *scene) { s.update(setImageTag("v2")) },
		want:    layout{"0/worker": "0=v1 1=v1 2=v1 3=v1", "0/shard": "0=v1 1=v1"},
		updated: map[string]int32{"worker": 0, "shard": 0, "set": 0},
		current: "v1", update: "v2", progressing: "WaitingForDeletion",
		check: onDeleteProgressEndsAtOnce,
	}, {
		name:    "delete worker 3 by hand",
		do:      func(s *scene) { s.deletePod(s.podName(0, "worker", 3)) },
		want:    layout{"0/worker": "0=v1 1=v1 2=v1 3=v2", "0/shard": "0=v1 1=v1"},
		updated: map[string]int32{"worker": 1, "shard": 0, "set": 0},
		current: "v1", update: "v2", progressing: "WaitingForDeletion",
	}, {
		name:    "delete shard replica 1 by hand",
		do:      func(s *scene) { s.deleteGroupReplica(0, "shard", 1) },
		want:    layout{"0/worker": "0=v1 1=v1 2=v1 3=v2", "0/shard": "0=v1 1=v2"},
		updated: map[string]int32{"worker": 1, "shard": 1, "set": 0},
		current: "v1", update: "v2", progressing: "WaitingForDeletion",
	}, {
		// Highest index first would take worker 3, the only updated pod.
		name:    "scale the workers in to 3",
		do:      func(s *scene) { s.update(cliqueReplicas("worker", 3)) },
		want:    layout{"0/worker": "0=v1 1=v1 3=v2", "0/shard": "0=v1 1=v2"},
		updated: map[string]int32{"worker": 1, "shard": 1, "set": 0},
		current: "v1", update: "v2", progressing: "WaitingForDeletion",
		deletes: []string{"worker-2"},
	}, {
		// Deleting worker 3 too lets the replacements fill indices 0..2.
		name: "delete every remaining outdated unit, and worker 3, by hand",
		do: func(s *scene) {
			for _, i := range []int{0, 1, 3} {
				s.deletePod(s.podName(0, "worker", i))
			}
			s.deleteGroupReplica(0, "shard", 0)
		},
		want:    layout{"0/worker": "0=v2 1=v2 2=v2", "0/shard": "0=v2 1=v2"},
		updated: map[string]int32{"worker": 3, "shard": 2, "set": 1},
		current: "v2", update: "v2", progressing: "RolloutComplete",
	}}

	revisions := map[string]string{} // image version → PodCliqueSet revision
	for _, step := range steps {
		start := time.Now()
		if step.do != nil {
			step.do(s)
		}
		var last *observed
		err := s.await(step.name, 40*time.Second, func(ctx context.Context) (bool, string, error) {
			o, err := s.observe(ctx)
			if err != nil {
				return false, "", err
			}
			last = o
			problems, err := step.problems(ctx, s, o, revisions)
			if err != nil {
				return false, "", err
			}
			return len(problems) == 0, o.describe() + strings.Join(problems, "\n"), nil
		})
		if err != nil {
			// The later steps still run: each expects a whole state of its own.
			t.Errorf("step %q: %v", step.name, err)
		} else {
			learn := func(version, name string) {
				if _, known := revisions[version]; !known {
					revisions[version] = name
				}
			}
			learn(step.current, last.pcs.Status.CurrentRevision)
			learn(step.update, last.pcs.Status.UpdateRevision)
			t.Logf("step %q: reached after %s", step.name, time.Since(start).Round(10*time.Millisecond))
		}
		var deleted []string
		for _, e := range operatorDeletions(t, s.m.Timeline(), start) {
			deleted = append(deleted, fmt.Sprintf("%s-%d", e.Clique, e.Index))
		}
		if !slices.Equal(deleted, step.deletes) {
			t.Errorf("step %q: the operator deleted %v, want %v", step.name, deleted, step.deletes)
		}
		if step.check != nil {
			if err := step.check(t.Context(), s); err != nil {
				t.Errorf("step %q: %v", step.name, err)
			}
		}
	}
}

// problems lists how o (and the children's status) differs from the step's
// expectations; none means the step is done.
func (step *onDeleteStep) problems(ctx context.Context, s *scene, o *observed, revisions map[string]string) ([]string, error) {
	var out []string
	if d := o.layout.diff(step.want); d != "" {
		out = append(out, "pods: "+d)
	}
	st := &o.pcs.Status
	if st.ObservedGeneration != o.pcs.Generation {
		out = append(out, fmt.Sprintf("status of generation %d, spec at %d", st.ObservedGeneration, o.pcs.Generation))
	}
	for _, r := range []struct{ field, got, version string }{
		{"currentRevision", st.CurrentRevision, step.current},
		{"updateRevision", st.UpdateRevision, step.update},
	} {
		want, known := revisions[r.version]
		switch {
		case known && r.got != want:
			out = append(out, fmt.Sprintf("%s %s, want %s (%s)", r.field, r.got, want, r.version))
		case !known && (r.got == "" || slices.Contains(mapValues(revisions), r.got)):
			out = append(out, fmt.Sprintf("%s %s, want a new revision for %s", r.field, r.got, r.version))
		}
	}
	if c := apimeta.FindStatusCondition(st.Conditions, "Progressing"); c == nil || c.Reason != step.progressing {
		out = append(out, fmt.Sprintf("Progressing %+v, want reason %s", c, step.progressing))
	}
	if st.UpdatedReplicas != step.updated["set"] {
		out = append(out, fmt.Sprintf("PodCliqueSet updatedReplicas %d, want %d", st.UpdatedReplicas, step.updated["set"]))
	}

	pc := &v1alpha1.PodClique{}
	if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.podCliqueName(0, "worker")}, pc); err != nil {
		return nil, err
	}
	if pc.Status.ObservedGeneration != pc.Generation {
		out = append(out, fmt.Sprintf("PodClique %s: status of generation %d, spec at %d", pc.Name, pc.Status.ObservedGeneration, pc.Generation))
	}
	if pc.Status.UpdatedReplicas != step.updated["worker"] {
		out = append(out, fmt.Sprintf("PodClique %s updatedReplicas %d, want %d", pc.Name, pc.Status.UpdatedReplicas, step.updated["worker"]))
	}
	g := &v1alpha1.PodCliqueScalingGroup{}
	if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.scalingGroupName(0, "shard")}, g); err != nil {
		return nil, err
	}
	if g.Status.ObservedGeneration != g.Generation {
		out = append(out, fmt.Sprintf("PodCliqueScalingGroup %s: status of generation %d, spec at %d", g.Name, g.Status.ObservedGeneration, g.Generation))
	}
	if g.Status.UpdatedReplicas != step.updated["shard"] {
		out = append(out, fmt.Sprintf("PodCliqueScalingGroup %s updatedReplicas %d, want %d", g.Name, g.Status.UpdatedReplicas, step.updated["shard"]))
	}
	return out, nil
}

// onDeleteProgressEndsAtOnce: under OnDelete the operator's part of an update
// ends when the children take the new template, so updateStartedAt and
// updateEndedAt are the same moment, at every level.
func onDeleteProgressEndsAtOnce(ctx context.Context, s *scene) error {
	pcs, err := s.get(ctx)
	if err != nil {
		return err
	}
	pc := &v1alpha1.PodClique{}
	if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.podCliqueName(0, "worker")}, pc); err != nil {
		return err
	}
	g := &v1alpha1.PodCliqueScalingGroup{}
	if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.scalingGroupName(0, "shard")}, g); err != nil {
		return err
	}
	type span struct {
		what           string
		started, ended *metav1.Time
	}
	spans := []span{{what: "PodCliqueSet"}, {what: "PodClique " + pc.Name}, {what: "PodCliqueScalingGroup " + g.Name}}
	if p := pcs.Status.UpdateProgress; p != nil {
		spans[0].started, spans[0].ended = p.UpdateStartedAt, p.UpdateEndedAt
	}
	if p := pc.Status.UpdateProgress; p != nil {
		spans[1].started, spans[1].ended = p.UpdateStartedAt, p.UpdateEndedAt
	}
	if p := g.Status.UpdateProgress; p != nil {
		spans[2].started, spans[2].ended = p.UpdateStartedAt, p.UpdateEndedAt
	}
	var problems []string
	for _, sp := range spans {
		if sp.started == nil || sp.ended == nil || !sp.started.Equal(sp.ended) {
			problems = append(problems, fmt.Sprintf("%s: updateStartedAt %v, updateEndedAt %v, want both set and equal", sp.what, sp.started, sp.ended))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// cliqueReplicas sets the replicas of a clique of the template.
func cliqueReplicas(clique string, n int32) func(*v1alpha1.PodCliqueSetSpec) {
	return func(spec *v1alpha1.PodCliqueSetSpec) {
		spec.Template.Clique(clique).Replicas = n
	}
}
