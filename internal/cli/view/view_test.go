package view

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current rendering")

// now is the fixed clock of every snapshot.
var now = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }

// podState is how a fixture pod looks: its revision ("v1" or "v2") and state.
type podState struct {
	rev   string
	state string // ready, starting, unscheduled, terminating
	surge bool
}

// fixture builds the children and pods of pcs; state says each pod's state
// from its replica, clique, group replica (-1 for standalone) and index.
func fixture(t *testing.T, example string, edit func(*v1alpha1.PodCliqueSet), state func(replica int32, clique string, groupReplica, index int32) []podState) *Snapshot {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", example))
	if err != nil {
		t.Fatal(err)
	}
	pcs := &v1alpha1.PodCliqueSet{}
	if err := yaml.Unmarshal(data, pcs); err != nil {
		t.Fatal(err)
	}
	pcs.Default()
	for i := range pcs.Spec.Template.Cliques {
		// The CRD's default, which Default leaves to the apiserver.
		if c := &pcs.Spec.Template.Cliques[i]; c.Replicas == 0 {
			c.Replicas = 1
		}
	}
	pcs.Namespace = "demo"
	pcs.Generation, pcs.Status.ObservedGeneration = 2, 2
	old := pcs.DeepCopy()
	for i := range pcs.Spec.Template.Cliques {
		c := &pcs.Spec.Template.Cliques[i]
		for j := range c.Template.Spec.Containers {
			img := &c.Template.Spec.Containers[j].Image
			*img = (*img)[:len(*img)-2] + "v2"
		}
	}
	v1, v2 := pcs.Name+"-v1hash", pcs.Name+"-v2hash"
	pcs.Status.CurrentRevision, pcs.Status.UpdateRevision = v1, v2
	edit(pcs)
	s := &Snapshot{PCS: pcs, Now: now}
	for n, p := range map[int64]*v1alpha1.PodCliqueSet{1: old, 2: pcs} {
		name := v1
		if n == 2 {
			name = v2
		}
		cr, err := revision.NewControllerRevision(p, rollout.SetRevision{Name: name}, n)
		if err != nil {
			t.Fatal(err)
		}
		s.Revisions = append(s.Revisions, *cr)
	}
	revName := map[string]string{"v1": v1, "v2": v2}
	replicas := *pcs.Spec.Replicas
	for r := range replicas {
		addClique := func(tmpl *v1alpha1.PodCliqueTemplateSpec, group string, gr int32) {
			name := fmt.Sprintf("%s-%d-%s", pcs.Name, r, tmpl.Name)
			labels := map[string]string{
				v1alpha1.LabelPodCliqueSet: pcs.Name, v1alpha1.LabelPodCliqueSetReplicaIndex: fmt.Sprint(r), v1alpha1.LabelClique: tmpl.Name,
			}
			if group != "" {
				name = fmt.Sprintf("%s-%d-%s-%d-%s", pcs.Name, r, group, gr, tmpl.Name)
				labels[v1alpha1.LabelPodCliqueScalingGroup] = group
				labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex] = fmt.Sprint(gr)
			}
			c := v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
			c.Spec.Replicas = tmpl.Replicas
			states := state(r, tmpl.Name, gr, tmpl.Replicas)
			updating := false
			for i, ps := range states {
				pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s-%d", name, i),
					Labels: map[string]string{
						v1alpha1.LabelPodClique: name, v1alpha1.LabelPodIndex: fmt.Sprint(i), v1alpha1.LabelPodCliqueSetRevision: revName[ps.rev],
					},
				}}
				if ps.surge {
					pod.Labels[v1alpha1.LabelSurge] = "true"
				}
				switch ps.state {
				case "ready":
					pod.Spec.NodeName = "node-1"
					pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					c.Status.ReadyReplicas++
				case "starting":
					pod.Spec.NodeName = "node-1"
					updating = true
				case "unscheduled":
					updating = true
				case "terminating":
					pod.Spec.NodeName = "node-1"
					pod.DeletionTimestamp = ago(time.Second)
					updating = true
				}
				if ps.rev == "v2" && pod.DeletionTimestamp == nil {
					c.Status.UpdatedReplicas++
				}
				s.Pods = append(s.Pods, pod)
			}
			reason := v1alpha1.ReasonUpdateComplete
			switch {
			case updating:
				reason = v1alpha1.ReasonUpdating
			case c.Status.UpdatedReplicas < c.Spec.Replicas:
				reason = v1alpha1.ReasonHeldBackByOwner
			}
			c.Status.Conditions = []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionTrue, Reason: string(reason)}}
			s.Cliques = append(s.Cliques, c)
		}
		inGroup := map[string]bool{}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroups {
			for _, n := range g.CliqueNames {
				inGroup[n] = true
			}
		}
		for i := range pcs.Spec.Template.Cliques {
			if c := &pcs.Spec.Template.Cliques[i]; !inGroup[c.Name] {
				addClique(c, "", -1)
			}
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroups {
			sg := v1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%d-%s", pcs.Name, r, g.Name),
				Labels: map[string]string{v1alpha1.LabelPodCliqueSet: pcs.Name, v1alpha1.LabelPodCliqueSetReplicaIndex: fmt.Sprint(r), v1alpha1.LabelPodCliqueScalingGroup: g.Name},
			}}
			sg.Spec.Replicas = g.Replicas
			before := len(s.Cliques)
			for gr := range g.Replicas {
				for _, n := range g.CliqueNames {
					addClique(pcs.Spec.Template.Clique(n), g.Name, gr)
				}
			}
			reason := v1alpha1.ReasonUpdateComplete
			for gr := range g.Replicas {
				whole := true
				for _, c := range s.Cliques[before:] {
					if c.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex] == fmt.Sprint(gr) && c.Status.ReadyReplicas < c.Spec.Replicas {
						whole = false
					}
					if c.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex] == fmt.Sprint(gr) && c.Status.Conditions[0].Reason == string(v1alpha1.ReasonUpdating) {
						reason = v1alpha1.ReasonUpdating
						sg.Status.UpdateProgress = &v1alpha1.ChildUpdateProgress{ReplicaIndicesSelectedToUpdate: []int32{gr}}
					}
				}
				if whole {
					sg.Status.AvailableReplicas++
				}
			}
			sg.Status.Conditions = []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionTrue, Reason: string(reason)}}
			s.Groups = append(s.Groups, sg)
		}
	}
	return s
}

func same(n int32, ps podState) []podState {
	out := make([]podState, n)
	for i := range out {
		out[i] = ps
	}
	return out
}

var (
	readyV1 = podState{rev: "v1", state: "ready"}
	readyV2 = podState{rev: "v2", state: "ready"}
)

func progressing(status metav1.ConditionStatus, reason v1alpha1.ConditionReason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: status, Reason: string(reason), Message: msg}}
}

// disaggMidRollout: replica 0 of the disaggregated example half way: its
// frontend replacing pod 2, prefill replica 1 coming up on v2, decode still on
// v1; replica 1 untouched.
func disaggMidRollout(t *testing.T) *Snapshot {
	return fixture(t, "disaggregated.yaml", func(pcs *v1alpha1.PodCliqueSet) {
		pcs.Status.Replicas, pcs.Status.ReadyReplicas, pcs.Status.AvailableReplicas = 2, 1, 2
		pcs.Status.Conditions = progressing(metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress,
			"updating replica 0; waiting for pod disagg-0-frontend-2 (not ready: containers with unready status: [frontend]), pod disagg-0-prefill-1-prefill-worker-1 (not scheduled: 0/8 nodes are available: 8 Insufficient nvidia.com/gpu.)")
		pcs.Status.UpdateProgress = &v1alpha1.PodCliqueSetUpdateProgress{
			UpdateStartedAt: ago(95 * time.Second), LastProgressAt: ago(4 * time.Second),
			UpdatingReplicas: []v1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 0, UpdateStartedAt: ago(95 * time.Second)}},
		}
	}, func(replica int32, clique string, gr, n int32) []podState {
		if replica == 1 {
			return same(n, readyV1)
		}
		switch clique {
		case "frontend":
			return []podState{readyV2, readyV2, {rev: "v2", state: "starting"}}
		case "prefill-leader":
			if gr == 0 {
				return same(n, readyV2)
			}
			return []podState{{rev: "v2", state: "starting"}}
		case "prefill-worker":
			if gr == 0 {
				return same(n, readyV2)
			}
			return []podState{{rev: "v2", state: "starting"}, {rev: "v2", state: "unscheduled"}}
		}
		return same(n, readyV1)
	})
}

// roleStepsMidRollout: role-ordered-pd at step 2 of 4 in replica 1 (one decode
// replica updated, prefill replica 0 on its way), replica 0 held by partition 1.
func roleStepsMidRollout(t *testing.T) *Snapshot {
	return fixture(t, "role-ordered-pd.yaml", func(pcs *v1alpha1.PodCliqueSet) {
		pcs.Spec.ProgressDeadlineSeconds = new(int32(120))
		pcs.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: new(int32(1))}
		pcs.Status.Replicas, pcs.Status.ReadyReplicas, pcs.Status.AvailableReplicas = 2, 1, 2
		pcs.Status.Conditions = progressing(metav1.ConditionTrue, v1alpha1.ReasonRoleStepWaiting,
			"replica 1: step 2, prefill to 1 updated and ready (0 now); waiting for pod pd-ordered-1-prefill-0-prefill-worker-0 (not ready: containers with unready status: [engine])")
		pcs.Status.UpdateProgress = &v1alpha1.PodCliqueSetUpdateProgress{
			UpdateStartedAt: ago(40 * time.Second), LastProgressAt: ago(10 * time.Second),
			UpdatingReplicas: []v1alpha1.PodCliqueSetReplicaUpdateProgress{{
				ReplicaIndex: 1, UpdateStartedAt: ago(40 * time.Second),
				RoleStep: &v1alpha1.RoleStepProgress{Index: 1, Role: "prefill", Target: 1, UpdatedAndReady: 0},
			}},
		}
	}, func(replica int32, clique string, gr, n int32) []podState {
		switch {
		case replica == 0:
			return same(n, readyV1)
		case clique == "decode-leader" && gr == 0, clique == "decode-worker" && gr == 0, clique == "prefill-leader" && gr == 0:
			return same(n, readyV2)
		case clique == "prefill-worker" && gr == 0:
			return []podState{{rev: "v2", state: "starting"}}
		}
		return same(n, readyV1)
	})
}

// awaitingApproval: replica 0 is done and the gate after it waits for approval.
func awaitingApproval(t *testing.T) *Snapshot {
	return fixture(t, "role-ordered-pd.yaml", func(pcs *v1alpha1.PodCliqueSet) {
		pcs.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true}
		pcs.Status.Replicas, pcs.Status.ReadyReplicas, pcs.Status.AvailableReplicas, pcs.Status.UpdatedReplicas = 2, 2, 2, 1
		pcs.Status.Conditions = progressing(metav1.ConditionTrue, v1alpha1.ReasonAwaitingApproval,
			"1 of 2 replicas updated; gate replicas-1 awaits approval of revision v2 (kubectl lockstep approve, or the annotation lockstep.dev/approved-revision=v2@replicas-1)")
		pcs.Status.UpdateProgress = &v1alpha1.PodCliqueSetUpdateProgress{
			UpdateStartedAt: ago(3 * time.Minute), LastProgressAt: ago(time.Minute),
			Gate: &v1alpha1.GateStatus{Name: "replicas-1", Reason: v1alpha1.ReasonAwaitingApproval, ReachedAt: *ago(time.Minute)},
		}
	}, func(replica int32, clique string, gr, n int32) []podState {
		if replica == 0 {
			return same(n, readyV2)
		}
		return same(n, readyV1)
	})
}

// stalledSurge: a surge pod that cannot be placed, past the progress deadline.
func stalledSurge(t *testing.T) *Snapshot {
	return fixture(t, "single-node-aggregated.yaml", func(pcs *v1alpha1.PodCliqueSet) {
		pcs.Spec.ProgressDeadlineSeconds = new(int32(20))
		pcs.Spec.Template.Cliques[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: new(intstr.FromInt32(0)), MaxSurge: new(intstr.FromInt32(1))}
		pcs.Status.Replicas, pcs.Status.ReadyReplicas, pcs.Status.AvailableReplicas = 1, 1, 1
		name := pcs.Name + "-0-" + pcs.Spec.Template.Cliques[0].Name + "-2"
		pcs.Status.Conditions = append(progressing(metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded,
			"no progress for 20s; waiting for surge pod "+name+" (not scheduled: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.)"),
			metav1.Condition{Type: string(v1alpha1.ConditionGangScheduled), Status: metav1.ConditionFalse, Reason: "Unschedulable",
				Message: "replica 0: gang " + pcs.Name + "-0: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."})
		pcs.Status.UpdateProgress = &v1alpha1.PodCliqueSetUpdateProgress{
			UpdateStartedAt: ago(31 * time.Second), LastProgressAt: ago(26 * time.Second),
			UpdatingReplicas: []v1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 0, UpdateStartedAt: ago(31 * time.Second)}},
		}
	}, func(replica int32, clique string, gr, n int32) []podState {
		if clique == "engine" || n == 2 {
			return []podState{readyV1, readyV1, {rev: "v2", state: "unscheduled", surge: true}}
		}
		return same(n, readyV1)
	})
}

func complete(t *testing.T) *Snapshot {
	return fixture(t, "disaggregated.yaml", func(pcs *v1alpha1.PodCliqueSet) {
		pcs.Status.CurrentRevision = pcs.Status.UpdateRevision
		pcs.Status.Replicas, pcs.Status.ReadyReplicas, pcs.Status.AvailableReplicas, pcs.Status.UpdatedReplicas = 2, 2, 2, 2
		pcs.Status.Conditions = progressing(metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete, "every replica runs the update revision")
		pcs.Status.UpdateProgress = &v1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: ago(5 * time.Minute), UpdateEndedAt: ago(3 * time.Minute)}
	}, func(_ int32, _ string, _, n int32) []podState { return same(n, readyV2) })
}

func TestRender_Golden(t *testing.T) {
	cases := []struct {
		name string
		snap func(*testing.T) *Snapshot
		opts Options
	}{
		{"disagg-mid-rollout", disaggMidRollout, Options{}},
		{"disagg-mid-rollout-pods", disaggMidRollout, Options{Pods: true}},
		{"disagg-mid-rollout-color", disaggMidRollout, Options{Color: true}},
		{"role-steps", roleStepsMidRollout, Options{}},
		{"awaiting-approval", awaitingApproval, Options{}},
		{"stalled-surge", stalledSurge, Options{Pods: true}},
		{"complete-no-pods", complete, Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, tc.snap(t), tc.opts); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/cli/view -update to write it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("rendering differs from %s (rerun with -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

func TestSplitWaiting_KeepsCommasInsideReasons(t *testing.T) {
	head, items := SplitWaiting("updating replica 0; waiting for pod a (x, y), surge pod b (z (1, 2)) and 3 more")
	want := []string{"pod a (x, y)", "surge pod b (z (1, 2))", "and 3 more"}
	if head != "updating replica 0" || fmt.Sprint(items) != fmt.Sprint(want) {
		t.Errorf("SplitWaiting = %q, %q; want %q, %q", head, items, "updating replica 0", want)
	}
	if head, items := SplitWaiting("every replica runs the update revision"); head != "every replica runs the update revision" || items != nil {
		t.Errorf("a message without waiting pods split into %q, %q", head, items)
	}
}
