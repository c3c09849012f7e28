package narrate

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Every event the controllers record is also one log line naming the action,
// the reason, the object and the message, and is counted by its reason.
func TestRecorder_LogsEveryEventWithItsObject(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	fake := events.NewFakeRecorder(1)
	r := Recorder(fake, log)
	pclq := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0-frontend"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0-frontend-2"}}
	before := testutil.ToFloat64(recorded.WithLabelValues("DeletedPod"))
	r.Eventf(pclq, pod, corev1.EventTypeNormal, "DeletedPod", "Delete", "Deleted pod %s (index %d): %s", pod.Name, 2, "update")

	if got := testutil.ToFloat64(recorded.WithLabelValues("DeletedPod")); got != before+1 {
		t.Errorf("lockstep_events_recorded_total{reason=DeletedPod} went from %v to %v, want one more", before, got)
	}
	if got := <-fake.Events; !strings.Contains(got, "DeletedPod") {
		t.Fatalf("the inner recorder got %q", got)
	}
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1: %q", len(lines), lines)
	}
	for _, want := range []string{`"msg"="Deleted pod llm-0-frontend-2 (index 2): update"`, `"action"="Delete"`, `"reason"="DeletedPod"`,
		`"object"="ns/llm-0-frontend"`, `"related"="ns/llm-0-frontend-2"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s lacks %s", lines[0], want)
		}
	}
}
