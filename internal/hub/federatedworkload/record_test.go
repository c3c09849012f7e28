package federatedworkload

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
)

// Every Event a round asks for is recorded on the workload and logged with
// its reason and message.
func TestRecord_EveryEventIsAlsoALogLine(t *testing.T) {
	var lines []string
	ctx := logr.NewContext(t.Context(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	fake := events.NewFakeRecorder(2)
	r := &Reconciler{Recorder: fake}
	fw := &fleetv1alpha1.FederatedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	r.record(ctx, fw, []round.Event{
		{Type: corev1.EventTypeWarning, Reason: "MemberObjectConflict", Action: "Apply", Message: "cluster a: Conflict: 100% taken"},
		{Type: corev1.EventTypeNormal, Reason: round.EventGranted, Action: "Align", Message: "b: started=true"},
	})
	for i, want := range []string{`"msg"="cluster a: Conflict: 100% taken"`, `"msg"="b: started=true"`} {
		if got := <-fake.Events; !strings.Contains(got, []string{"MemberObjectConflict", "Granted"}[i]) {
			t.Errorf("event %d recorded as %q", i, got)
		}
		if i >= len(lines) || !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"reason"=`) || !strings.Contains(lines[i], `"object"="shop/web"`) {
			t.Errorf("log lines %q lack %s with its reason and object", lines, want)
		}
	}
}
