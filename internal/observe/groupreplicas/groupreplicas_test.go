package groupreplicas

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// member is a group replica's member PodClique labelled as the scaling group
// controller makes them.
func member(name string, idx, groupRevision string, image string) v1alpha1.PodClique {
	return v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: idx,
			v1alpha1.LabelTemplateHash:                      groupRevision,
			v1alpha1.LabelClique:                            "worker",
		}},
		Spec: v1alpha1.PodCliqueSpec{Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: image}},
		}}},
	}
}

func memberPod(t *testing.T, clique *v1alpha1.PodClique, idx string) corev1.Pod {
	t.Helper()
	h, err := revision.PodCliqueHash(clique)
	if err != nil {
		t.Fatal(err)
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: clique.Name + "-0", Labels: map[string]string{
			v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: idx,
			v1alpha1.LabelPodClique:                         clique.Name,
			v1alpha1.LabelClique:                            "worker",
			v1alpha1.LabelPodIndex:                          "0",
			v1alpha1.LabelTemplateHash:                      h,
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// A group replica's revision is its member PodCliques' unless a live member
// pod does not carry its PodClique's template hash (another writer changed
// the label): then the replica reads outdated, as a StatefulSet counts such a
// pod. A terminating pod does not count; it is on its way out.
func TestObserve_APodWithAForeignHashMakesItsReplicaOutdated(t *testing.T) {
	now := time.Now()
	cliques := []v1alpha1.PodClique{member("g-0-worker", "0", "rev-new", "img:v2"), member("g-1-worker", "1", "rev-new", "img:v2")}
	pods := []corev1.Pod{memberPod(t, &cliques[0], "0"), memberPod(t, &cliques[1], "1")}

	got := Observe(cliques, pods, 0, now)
	for _, rep := range got.Replicas {
		if rep.Revision != "rev-new" {
			t.Fatalf("untouched pods: replica %d has revision %q, want rev-new", rep.Index, rep.Revision)
		}
	}

	pods[1].Labels[v1alpha1.LabelTemplateHash] = "relabelled"
	got = Observe(cliques, pods, 0, now)
	if r := got.Replicas[0].Revision; r != "rev-new" {
		t.Errorf("replica 0 (its pods untouched) has revision %q, want rev-new", r)
	}
	if r := got.Replicas[1].Revision; r == "rev-new" {
		t.Errorf("replica 1 has a relabelled pod but still reads revision %q", r)
	}

	pods[1].DeletionTimestamp = &metav1.Time{Time: now}
	got = Observe(cliques, pods, 0, now)
	if r := got.Replicas[1].Revision; r != "rev-new" {
		t.Errorf("replica 1's relabelled pod is terminating; revision %q, want rev-new", r)
	}
}
