// Package pods reads what the planner needs to know about a pod: its index,
// revision and health. Every controller observes pods through it.
package pods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Unit describes one pod for the planner; ok is false for a pod without an index
// label (not one of ours: indices are written at creation, never parsed from names).
func Unit(p *corev1.Pod, minReadySeconds int32, now time.Time) (u rollout.Unit, ok bool) {
	idx, ok := v1alpha1.IndexLabel(p.Labels, v1alpha1.LabelPodIndex)
	if !ok {
		return rollout.Unit{}, false
	}
	ready, since := Ready(p)
	return rollout.Unit{
		Index:       idx,
		Revision:    p.Labels[v1alpha1.LabelTemplateHash],
		Surge:       p.Labels[v1alpha1.LabelSurge] == "true",
		Scheduled:   p.Spec.NodeName != "",
		Ready:       ready,
		Available:   rollout.PodAvailable(ready, since, minReadySeconds, now),
		Terminating: p.DeletionTimestamp != nil,
		CreatedAt:   p.CreationTimestamp.Time,
		ReadySince:  since,
		Key:         p.Name,
	}, true
}

// Ready reports the pod's Ready condition and since when it holds.
func Ready(p *corev1.Pod) (bool, time.Time) {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false, time.Time{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// UntilAvailable is how long a ready pod still waits for minReadySeconds, with a
// little slack so a requeue lands after the moment, not before it.
func UntilAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	ready, since := Ready(p)
	if !ready || minReadySeconds == 0 {
		return 0
	}
	if wait := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now); wait > 0 {
		return wait + 100*time.Millisecond
	}
	return 0
}

// Sooner returns the earlier of two positive waits (0 means none).
func Sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// Unschedulable reports whether the scheduler tried a live pod and found no
// room for it (or did not admit its gang): PodScheduled False, reason
// Unschedulable.
func Unschedulable(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// maxWaitingLen bounds WaitingFor: it ends up in a condition message.
const maxWaitingLen = 300

// WaitingFor says in a few words why a live pod is not ready yet, using what
// the scheduler and the kubelet wrote on it; "" for a ready or terminating pod.
func WaitingFor(p *corev1.Pod) string {
	if ready, _ := Ready(p); ready || p.DeletionTimestamp != nil {
		return ""
	}
	if p.Spec.NodeName == "" {
		if len(p.Spec.SchedulingGates) > 0 {
			names := make([]string, 0, len(p.Spec.SchedulingGates))
			for _, g := range p.Spec.SchedulingGates {
				names = append(names, g.Name)
			}
			return "held by scheduling gates " + strings.Join(names, ", ")
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				return clip("not scheduled: " + c.Message)
			}
		}
		return "not scheduled yet"
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return clip(fmt.Sprintf("container %s waiting: %s %s", s.Name, w.Reason, w.Message))
		}
		if t := s.State.Terminated; t != nil {
			return clip(fmt.Sprintf("container %s terminated: %s (exit code %d)", s.Name, t.Reason, t.ExitCode))
		}
	}
	return "scheduled on " + p.Spec.NodeName + ", not ready yet"
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxWaitingLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxWaitingLen], "") + "..."
}
