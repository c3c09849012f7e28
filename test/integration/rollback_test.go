package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func setAnnotation(t *testing.T, pcs *v1alpha1.PodCliqueSet, key, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs); err != nil {
			return err
		}
		if pcs.Annotations == nil {
			pcs.Annotations = map[string]string{}
		}
		pcs.Annotations[key] = value
		return env.Client.Update(context.Background(), pcs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func engineImage(pcs *v1alpha1.PodCliqueSet) string {
	for _, c := range pcs.Spec.Template.Cliques {
		if c.Name != "frontend" {
			return c.Template.Spec.Containers[0].Image
		}
	}
	return ""
}

func awaitRolledOut(t *testing.T, pcs *v1alpha1.PodCliqueSet, what string) {
	t.Helper()
	waitFor(t, what, 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.ObservedGeneration == pcs.Generation && pcs.Status.UpdatedReplicas == 2 &&
			pcs.Status.CurrentRevision == pcs.Status.UpdateRevision, fmt.Sprintf("%+v", pcs.Status)
	})
}

func revisionNumber(t *testing.T, ns, name string) int64 {
	t.Helper()
	cr := &appsv1.ControllerRevision{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
		t.Fatal(err)
	}
	return cr.Revision
}

// The rollback annotation rolls the pod templates back to a kept revision as an
// ordinary update: the spec gets the old templates, the annotation goes, the
// revision becomes the newest again, and the pods follow.
func TestRollback_AnnotationRollsBackToAKeptRevision(t *testing.T) {
	ns, pcs := disaggScene(t)
	v1Image, v1Revision := engineImage(pcs), pcs.Status.UpdateRevision
	updatePCS(t, pcs, setEngineImage("lockstep-examples/llm-engine:v2"))
	awaitRolledOut(t, pcs, "the rollout to v2")
	v2Revision := pcs.Status.UpdateRevision

	setAnnotation(t, pcs, v1alpha1.AnnotationRollbackTo, strconv.FormatInt(revisionNumber(t, ns, v1Revision), 10))
	waitFor(t, "the rollback to reach the spec", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		_, annotated := pcs.Annotations[v1alpha1.AnnotationRollbackTo]
		return !annotated && engineImage(pcs) == v1Image, fmt.Sprintf("annotated %v, image %s", annotated, engineImage(pcs))
	})
	awaitRolledOut(t, pcs, "the rollout back to v1")
	if pcs.Status.UpdateRevision != v1Revision {
		t.Fatalf("rolled back to revision %s, want the v1 revision %s", pcs.Status.UpdateRevision, v1Revision)
	}
	if n1, n2 := revisionNumber(t, ns, v1Revision), revisionNumber(t, ns, v2Revision); n1 <= n2 {
		t.Fatalf("the revision rolled back to is number %d, not newer than v2's %d", n1, n2)
	}
	assertEvent(t, ns, "RollbackStarted", "Rolling back to revision 1")
	if n := rollbacks(t, ns, pcs.Name, "started"); n != 1 {
		t.Errorf("lockstep_rollbacks_total{result=started} = %v, want 1", n)
	}

	// "previous" goes back to v2, the revision before the current one.
	setAnnotation(t, pcs, v1alpha1.AnnotationRollbackTo, v1alpha1.RollbackToPrevious)
	waitFor(t, "the second rollback to reach the spec", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		_, annotated := pcs.Annotations[v1alpha1.AnnotationRollbackTo]
		return !annotated && engineImage(pcs) != v1Image, fmt.Sprintf("annotated %v, image %s", annotated, engineImage(pcs))
	})
	awaitRolledOut(t, pcs, "the rollback to the previous revision")
	if pcs.Status.UpdateRevision != v2Revision {
		t.Fatalf("rolled back to %s, want the previous revision %s", pcs.Status.UpdateRevision, v2Revision)
	}
}

// A rollback to a revision that is not kept changes nothing and says why.
func TestRollback_UnknownRevisionIsReportedAndDropped(t *testing.T) {
	ns, pcs := disaggScene(t)
	generation := pcs.Generation
	setAnnotation(t, pcs, v1alpha1.AnnotationRollbackTo, "42")
	waitFor(t, "the annotation to be dropped", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		_, annotated := pcs.Annotations[v1alpha1.AnnotationRollbackTo]
		return !annotated, fmt.Sprint(pcs.Annotations)
	})
	if pcs.Generation != generation {
		t.Fatalf("the spec changed (generation %d to %d) for a rollback that cannot happen", generation, pcs.Generation)
	}
	assertEvent(t, ns, "RollbackFailed", `lockstep.dev/rollback-to="42" names no kept revision; kept: 1 (`)
	if n := rollbacks(t, ns, pcs.Name, "failed"); n != 1 {
		t.Errorf("lockstep_rollbacks_total{result=failed} = %v, want 1", n)
	}
}

// assertEvent waits for an Event of the reason whose note contains text.
func assertEvent(t *testing.T, ns, reason, text string) {
	t.Helper()
	waitFor(t, "an Event "+reason, 30*time.Second, func() (bool, string) {
		var list eventsv1.EventList
		_ = env.Client.List(context.Background(), &list, client.InNamespace(ns))
		var notes []string
		for _, e := range list.Items {
			if e.Reason == reason {
				if strings.Contains(e.Note, text) {
					return true, ""
				}
				notes = append(notes, e.Note)
			}
		}
		return false, strings.Join(notes, " | ")
	})
}

// A template change written together with the rollback annotation is kept: the
// rollback would silently discard it, so it fails loudly instead.
func TestRollback_AnnotationWithATemplateChangeKeepsTheChange(t *testing.T) {
	ns, pcs := disaggScene(t)
	const editedAgain = "lockstep-examples/llm-engine:hotfix2"
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs); err != nil {
			return err
		}
		setEngineImage(editedAgain)(&pcs.Spec)
		if pcs.Annotations == nil {
			pcs.Annotations = map[string]string{}
		}
		pcs.Annotations[v1alpha1.AnnotationRollbackTo] = v1alpha1.RollbackToPrevious
		return env.Client.Update(context.Background(), pcs)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the annotation to be dropped", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		_, annotated := pcs.Annotations[v1alpha1.AnnotationRollbackTo]
		return !annotated, fmt.Sprint(pcs.Annotations)
	})
	if got := engineImage(pcs); got != editedAgain {
		t.Fatalf("engine image %s after the rollback was refused, want the change %s kept", got, editedAgain)
	}
	assertEvent(t, ns, "RollbackFailed", "the templates changed in the same update as the lockstep.dev/rollback-to annotation")
}

// rollbacks reads lockstep_rollbacks_total of a PodCliqueSet for one result.
func rollbacks(t *testing.T, ns, name, result string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "lockstep_rollbacks_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["podcliqueset"] == name && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
