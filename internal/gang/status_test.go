package gang

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod of gang "g" as the scheduler and kubelet leave it.
type podState struct {
	name        string
	node        string // bound to
	gate        string // scheduling gate still on it
	unschedMsg  string // PodScheduled=False, Unschedulable, with this message
	terminating bool
	phase       corev1.PodPhase
}

func (s podState) pod() corev1.Pod {
	group := "g"
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec:       corev1.PodSpec{NodeName: s.node, SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: &group}},
		Status:     corev1.PodStatus{Phase: s.phase},
	}
	if s.gate != "" {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: s.gate}}
	}
	if s.unschedMsg != "" {
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: s.unschedMsg,
		}}
	}
	if s.terminating {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func podGroup(minCount int32, cond *metav1.Condition) *schedulingv1alpha2.PodGroup {
	pg := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: minCount},
		}},
	}
	if cond != nil {
		pg.Status.Conditions = []metav1.Condition{*cond}
	}
	return pg
}

func scheduledCond(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: schedulingv1alpha2.PodGroupScheduled, Status: status, Reason: reason, Message: msg}
}

// Messages as kube-scheduler 1.36 writes them.
const (
	groupUnschedulable = "pod group is unschedulable"
	waited             = "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins asked to wait and no plugin rejected pod"
)

const noGPU = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."

func TestNativeStatus_ExplainsWhyAGangIsNotPlaced(t *testing.T) {
	deleting := podGroup(3, nil)
	deleting.DeletionTimestamp = &metav1.Time{}

	cases := []struct {
		name string
		pg   *schedulingv1alpha2.PodGroup
		pods []podState
		want Status
	}{{
		name: "no PodGroup",
		want: Status{Reason: ReasonGangNotFound, Message: "PodGroup g does not exist"},
	}, {
		name: "fewer pods than minCount",
		pg:   podGroup(3, nil),
		pods: []podState{{name: "a"}, {name: "b"}},
		want: Status{Exists: true, MinCount: 3, Reason: ReasonWaitingForPods, Message: "2 of the 3 pods the gang needs exist"},
	}, {
		name: "every pod there, the scheduler has not looked yet",
		pg:   podGroup(2, nil),
		pods: []podState{{name: "a"}, {name: "b"}},
		want: Status{Exists: true, MinCount: 2, Reason: ReasonPending, Message: "waiting for the scheduler"},
	}, {
		name: "the scheduler's explanation comes from the pods",
		pg:   podGroup(3, scheduledCond(metav1.ConditionFalse, "Unschedulable", "pod group is unschedulable")),
		pods: []podState{{name: "c", unschedMsg: noGPU}, {name: "a", unschedMsg: noGPU}, {name: "b", unschedMsg: noGPU}},
		want: Status{Exists: true, MinCount: 3, Reason: ReasonUnschedulable, Message: noGPU},
	}, {
		// What the scheduler writes when 2 of 3 pods would fit: the two are told
		// they waited for the gang, the third why it does not fit.
		name: "the pod that did not fit explains, not the ones that waited",
		pg:   podGroup(3, scheduledCond(metav1.ConditionFalse, "Unschedulable", groupUnschedulable)),
		pods: []podState{{name: "a", unschedMsg: waited}, {name: "b", unschedMsg: noGPU}, {name: "c", unschedMsg: waited}},
		want: Status{Exists: true, MinCount: 3, Reason: ReasonUnschedulable, Message: noGPU},
	}, {
		name: "only pods that waited have been told so far",
		pg:   podGroup(3, scheduledCond(metav1.ConditionFalse, "Unschedulable", groupUnschedulable)),
		pods: []podState{{name: "a", unschedMsg: waited}, {name: "b"}, {name: "c"}},
		want: Status{Exists: true, MinCount: 3, Reason: ReasonUnschedulable, Message: waited},
	}, {
		name: "the PodGroup's own reason when no pod explains",
		pg:   podGroup(2, scheduledCond(metav1.ConditionFalse, "SchedulerError", "nodeAffinity cannot be parsed")),
		pods: []podState{{name: "a"}, {name: "b"}},
		want: Status{Exists: true, MinCount: 2, Reason: "SchedulerError", Message: "nodeAffinity cannot be parsed"},
	}, {
		name: "gated pods wait for their gate, not for capacity",
		pg:   podGroup(2, nil),
		pods: []podState{{name: "a", gate: "lockstep.dev/base-gang"}, {name: "b", gate: "lockstep.dev/base-gang"}},
		want: Status{Exists: true, MinCount: 2, Reason: ReasonSchedulingGated, Message: "pods wait for scheduling gates lockstep.dev/base-gang"},
	}, {
		name: "minCount pods bound",
		pg:   podGroup(2, scheduledCond(metav1.ConditionTrue, "Scheduled", "")),
		pods: []podState{{name: "a", node: "n1"}, {name: "b", node: "n2"}, {name: "surge", unschedMsg: noGPU}},
		want: Status{Exists: true, Scheduled: true, MinCount: 2, ScheduledPods: 2, Reason: ReasonScheduled, Message: "2 pods placed, 2 needed"},
	}, {
		// The scheduler leaves PodGroupScheduled True once it was; the pods
		// recreated after that are what count.
		name: "condition still True from an earlier placement",
		pg:   podGroup(2, scheduledCond(metav1.ConditionTrue, "Scheduled", "")),
		pods: []podState{{name: "a", unschedMsg: noGPU}, {name: "b", unschedMsg: noGPU}},
		want: Status{Exists: true, MinCount: 2, Reason: ReasonUnschedulable, Message: noGPU},
	}, {
		name: "terminating and finished pods do not count",
		pg:   podGroup(2, nil),
		pods: []podState{{name: "a", node: "n1"}, {name: "b", node: "n1", terminating: true}, {name: "c", node: "n1", phase: corev1.PodFailed}},
		want: Status{Exists: true, MinCount: 2, ScheduledPods: 1, Reason: ReasonWaitingForPods, Message: "1 of the 2 pods the gang needs exist"},
	}, {
		name: "PodGroup being deleted",
		pg:   deleting,
		pods: []podState{{name: "a", node: "n1"}, {name: "b", node: "n1"}, {name: "c", node: "n1"}},
		want: Status{Scheduled: true, MinCount: 3, ScheduledPods: 3, Reason: ReasonGangDeleting,
			Message: "PodGroup g is being deleted; it goes once no running pod uses it"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, s := range tc.pods {
				pods = append(pods, s.pod())
			}
			if got := nativeStatus("g", tc.pg, pods); got != tc.want {
				t.Errorf("nativeStatus:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNativeStatus_BoundsTheSchedulersMessage(t *testing.T) {
	long := strings.Repeat("0/1000 nodes are available: 1000 Insufficient nvidia.com/gpü. ", 100)
	pods := []corev1.Pod{podState{name: "a", unschedMsg: long}.pod()}
	got := nativeStatus("g", podGroup(1, nil), pods)
	if len(got.Message) > maxMessageLen || !utf8.ValidString(got.Message) || !strings.HasSuffix(got.Message, "...") {
		t.Errorf("message of %d bytes (valid UTF-8 %t), want at most %d ending in ...", len(got.Message), utf8.ValidString(got.Message), maxMessageLen)
	}
}
