package podclique

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// One step's pods are one Event per kind of change: a single pod reads as it
// always did, several are counted and named (at most podEventsListed), and
// deletes for different reasons stay apart.
func TestPodEvents_OneEventPerKindOfChange(t *testing.T) {
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", i)}}
	}
	var ev podEvents
	for i := range 12 {
		ev.add(pod(i), "CreatedPod", "Create", "Created", "pod", "", fmt.Sprintf("index %d, revision r2", i))
	}
	ev.add(pod(12), "CreatedPod", "Create", "Created", "surge pod", "", "index 12, revision r2")
	ev.add(pod(3), "DeletedPod", "Delete", "Deleted", "pod", "update", "index 3, revision r1")
	ev.add(pod(4), "DeletedPod", "Delete", "Deleted", "pod", "update", "index 4, revision r1")
	ev.add(pod(9), "DeletedPod", "Delete", "Deleted", "pod", "scale-in", "index 9, revision r1")

	rec := events.NewFakeRecorder(10)
	ev.record(rec, &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "w"}})
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Normal CreatedPod Created 12 pods: w-0 (index 0, revision r2), w-1 (index 1, revision r2), w-2 (index 2, revision r2), " +
			"w-3 (index 3, revision r2), w-4 (index 4, revision r2), w-5 (index 5, revision r2), w-6 (index 6, revision r2), " +
			"w-7 (index 7, revision r2), w-8 (index 8, revision r2), w-9 (index 9, revision r2) and 2 more",
		"Normal CreatedPod Created surge pod w-12 (index 12, revision r2)",
		"Normal DeletedPod Deleted 2 pods (update): w-3 (index 3, revision r1), w-4 (index 4, revision r1)",
		"Normal DeletedPod Deleted pod w-9 (index 9, revision r1): scale-in",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
