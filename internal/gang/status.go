package gang

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/internal/message"
)

// maxMessageLen bounds Status.Message: it ends up in status conditions, which
// must stay small, and the scheduler's explanations grow with the node count.
const maxMessageLen = 1024

// nativeStatus reads a gang's state from its PodGroup (nil when there is none)
// and the pods that joined it.
//
// Whether the gang is placed is counted from the pods, not read from the
// PodGroupScheduled condition: the scheduler sets that condition True once and
// leaves it True, even after every pod is gone and new ones cannot be placed.
// The condition and the pods' own PodScheduled conditions supply the reason.
func nativeStatus(name string, pg *schedulingv1alpha2.PodGroup, members []corev1.Pod) Status {
	if pg == nil {
		return Status{Reason: ReasonGangNotFound, Message: fmt.Sprintf("PodGroup %s does not exist", name)}
	}
	s := Status{Exists: pg.DeletionTimestamp == nil}
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		s.MinCount = g.MinCount
	}
	var live []*corev1.Pod // sorted by name, so the explanation picked is stable
	for i := range members {
		if p := &members[i]; p.DeletionTimestamp == nil && !terminal(p) {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range live {
		if p.Spec.NodeName != "" {
			s.ScheduledPods++
		}
	}
	s.Scheduled = s.ScheduledPods >= s.MinCount

	s.Reason, s.Message = func() (string, string) {
		if !s.Exists {
			return ReasonGangDeleting, fmt.Sprintf("PodGroup %s is being deleted; it goes once no running pod uses it", name)
		}
		if s.Scheduled {
			return ReasonScheduled, fmt.Sprintf("%d pods placed, %d needed", s.ScheduledPods, s.MinCount)
		}
		if gates := waitingGates(live); len(gates) > 0 {
			return ReasonSchedulingGated, fmt.Sprintf("pods wait for scheduling gates %s", strings.Join(gates, ", "))
		}
		group := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha2.PodGroupScheduled)
		if group != nil && group.Status != metav1.ConditionFalse {
			group = nil
		}
		if msg := unschedulableMessage(live, group); msg != "" {
			return ReasonUnschedulable, msg
		}
		if group != nil {
			return group.Reason, group.Message
		}
		if n := int32(len(live)); n < s.MinCount {
			return ReasonWaitingForPods, fmt.Sprintf("%d of the %d pods the gang needs exist", n, s.MinCount)
		}
		return ReasonPending, "waiting for the scheduler"
	}()
	s.Message = message.Truncate(s.Message, maxMessageLen)
	return s
}

// unschedulableMessage picks the scheduler's explanation from the pods it
// could not place. When a gang does not fit, the pods that would have fit are
// told only that their group is unschedulable (the PodGroup's own message,
// plus that they waited for the others); the pod that did not fit is told why.
// That one is preferred.
func unschedulableMessage(pods []*corev1.Pod, group *metav1.Condition) string {
	var first string
	for _, p := range pods {
		c := podScheduled(p)
		if p.Spec.NodeName != "" || c == nil || c.Status != corev1.ConditionFalse ||
			c.Reason != corev1.PodReasonUnschedulable || c.Message == "" {
			continue
		}
		if group == nil || group.Message == "" || !strings.HasPrefix(c.Message, group.Message) {
			return c.Message
		}
		if first == "" {
			first = c.Message
		}
	}
	return first
}

// waitingGates lists the scheduling gates that hold pods back.
func waitingGates(pods []*corev1.Pod) []string {
	var gates []string
	for _, p := range pods {
		for _, g := range p.Spec.SchedulingGates {
			if !slices.Contains(gates, g.Name) {
				gates = append(gates, g.Name)
			}
		}
	}
	slices.Sort(gates)
	return gates
}

// memberOf reports whether the pod joined the gang.
func memberOf(pod *corev1.Pod, gangName string) bool {
	g := pod.Spec.SchedulingGroup
	return g != nil && g.PodGroupName != nil && *g.PodGroupName == gangName
}

// terminal reports whether the pod has finished for good.
func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func podScheduled(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
