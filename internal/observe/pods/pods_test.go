package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWaitingFor(t *testing.T) {
	now := metav1.Now()
	ready := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	unschedulable := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. " + strings.Repeat("x", 400)}}}}
	gated := corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "lockstep.dev/base-gang"}}}}
	crashing := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}}}}}}
	starting := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	terminating := unschedulable
	terminating.DeletionTimestamp = &now

	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want string // prefix; "" means exactly empty
	}{
		{"ready", ready, ""},
		{"terminating", terminating, ""},
		{"unschedulable", unschedulable, "not scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."},
		{"gated", gated, "held by scheduling gates lockstep.dev/base-gang"},
		{"crash loop", crashing, "container main waiting: CrashLoopBackOff back-off 5m0s"},
		{"starting", starting, "scheduled on n, not ready yet"},
	} {
		got := WaitingFor(&tc.pod)
		if (tc.want == "" && got != "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: WaitingFor = %q, want %q...", tc.name, got, tc.want)
		}
		if len(got) > maxWaitingLen+3 {
			t.Errorf("%s: %d characters, more than the %d allowed", tc.name, len(got), maxWaitingLen)
		}
	}
}
