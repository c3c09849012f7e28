//go:build e2e

package fleetrollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	lockstepv1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// The fleet: members m1 (region eu) and m2 (region us), as fleet-up.sh
// registers them. Weights 2 and 3 split 10 replicas 4/6.
var memberNames = []string{"m1", "m2"}

const (
	appLabel    = "app"
	oldImage    = "web:1"
	newImage    = "web:2"
	stepTimeout = 90 * time.Second
	poll        = 250 * time.Millisecond
)

// story is one FederatedWorkload of a test, in a hub namespace of its own
// (the same namespace in the members), and the clients it needs.
type story struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	name    string
	kind    string // Deployment, StatefulSet or PodCliqueSet
	hub     client.WithWatch
	members map[string]client.WithWatch
}

func memberClients(t *testing.T) map[string]client.WithWatch {
	t.Helper()
	out := map[string]client.WithWatch{}
	for _, m := range memberNames {
		c, err := testFleet.Client(testFleet.MemberKubeconfig(m))
		if err != nil {
			t.Fatalf("client of %s: %v", m, err)
		}
		out[m] = c
	}
	return out
}

// newStory creates the namespace and a placement of both members, split 2:3.
func newStory(t *testing.T, ns, kind string) *story {
	t.Helper()
	s := &story{t: t, ctx: t.Context(), ns: ns, name: "web", kind: kind, hub: testFleet.Hub, members: memberClients(t)}
	if err := testFleet.Namespace(s.ctx, ns); err != nil {
		t.Fatal(err)
	}
	pl := &fleetv1alpha1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"},
		Spec:       fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}},
	}
	if err := s.hub.Create(s.ctx, pl); err != nil {
		t.Fatalf("creating the Placement: %v", err)
	}
	return s
}

// template is the member object of the story's kind running image.
func (s *story) template(image string) runtime.RawExtension {
	labels := map[string]any{appLabel: s.name}
	spec := map[string]any{
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}},
		},
	}
	apiVersion := "apps/v1"
	switch s.kind {
	case "StatefulSet":
		spec["serviceName"] = s.name
		spec["podManagementPolicy"] = "Parallel" // start quickly; updates stay one at a time
	case "PodCliqueSet":
		// One clique of one pod: a PodCliqueSet replica is one pod.
		apiVersion = "lockstep.dev/v1alpha1"
		spec = map[string]any{"template": map[string]any{"cliques": []any{map[string]any{
			"name": "web", "replicas": 1, "template": spec["template"],
		}}}}
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": s.kind, "spec": spec})
	return runtime.RawExtension{Raw: raw}
}

// create makes the FederatedWorkload (10 replicas, weights 2:3 by region)
// and waits until all 10 pods are available on the old image.
func (s *story) create(rs fleetv1alpha1.FederatedRolloutStrategy) {
	s.t.Helper()
	weight := func(region string, w int32) fleetv1alpha1.ClusterWeight {
		return fleetv1alpha1.ClusterWeight{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": region}}, Weight: w}
	}
	fw := &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{
			PlacementRef: fleetv1alpha1.PlacementReference{Name: "both"}, Replicas: 10,
			Template:        s.template(oldImage),
			Division:        fleetv1alpha1.Division{Weights: []fleetv1alpha1.ClusterWeight{weight("eu", 2), weight("us", 3)}},
			RolloutStrategy: rs,
		},
	}
	if err := s.hub.Create(s.ctx, fw); err != nil {
		s.t.Fatalf("creating the FederatedWorkload: %v", err)
	}
	s.t.Cleanup(s.delete)
	s.waitFor("the workload settled on "+oldImage, func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return complete(fw) && fw.Status.AvailableReplicas == 10
	})
}

// delete removes the workload and waits until the hub has deleted its member
// objects (the finalizer goes last).
func (s *story) delete() {
	ctx := context.Background()
	fw := &fleetv1alpha1.FederatedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}}
	if err := s.hub.Delete(ctx, fw); err != nil && !apierrors.IsNotFound(err) {
		s.t.Errorf("deleting the FederatedWorkload: %v", err)
		return
	}
	// t.Context is over in a cleanup: poll on a context of its own.
	for deadline := time.Now().Add(stepTimeout); ; {
		err := s.hub.Get(ctx, client.ObjectKeyFromObject(fw), fw)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Errorf("the FederatedWorkload not gone within %s: %v %s", stepTimeout, err, describe(fw))
			return
		}
		time.Sleep(poll)
	}
}

func (s *story) workload() *fleetv1alpha1.FederatedWorkload {
	s.t.Helper()
	var fw fleetv1alpha1.FederatedWorkload
	if err := s.hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: s.name}, &fw); err != nil {
		s.t.Fatalf("reading the FederatedWorkload: %v", err)
	}
	return &fw
}

// update changes the workload's spec, retrying when the hub wrote it in between.
func (s *story) update(what string, change func(*fleetv1alpha1.FederatedWorkload)) {
	s.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fw := s.workload()
		change(fw)
		return s.hub.Update(s.ctx, fw)
	})
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

func (s *story) eventually(what string, cond func() (bool, string)) {
	s.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not within %s; last: %s", what, stepTimeout, last)
		}
		select {
		case <-s.ctx.Done():
			s.t.Fatalf("%s: %v", what, s.ctx.Err())
		case <-time.After(poll):
		}
	}
}

// waitFor polls the workload until cond holds.
func (s *story) waitFor(what string, cond func(*fleetv1alpha1.FederatedWorkload) bool) *fleetv1alpha1.FederatedWorkload {
	s.t.Helper()
	var fw *fleetv1alpha1.FederatedWorkload
	s.eventually(what, func() (bool, string) {
		fw = s.workload()
		return cond(fw), describe(fw)
	})
	return fw
}

func describe(fw *fleetv1alpha1.FederatedWorkload) string {
	p := progressing(fw)
	return fmt.Sprintf("gen %d/%d, %d/%d/%d, clusters %+v, %s: %s", fw.Status.ObservedGeneration, fw.Generation,
		fw.Status.Replicas, fw.Status.UpdatedReplicas, fw.Status.AvailableReplicas, fw.Status.Clusters, p.Reason, p.Message)
}

func progressing(fw *fleetv1alpha1.FederatedWorkload) metav1.Condition {
	if c := meta.FindStatusCondition(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing)); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func complete(fw *fleetv1alpha1.FederatedWorkload) bool {
	return fw.Status.ObservedGeneration == fw.Generation && progressing(fw).Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete)
}

// watch starts the independent pod watcher over both members.
func (s *story) watch(b fleetwatch.PodBounds) *fleetwatch.PodWatcher {
	s.t.Helper()
	w, err := fleetwatch.StartPods(s.ctx, s.members, s.ns, s.podLabels(),
		func(p *corev1.Pod) bool { return len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image == newImage }, b)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(w.Stop)
	return w
}

// podLabels select the workload's pods in a member.
func (s *story) podLabels() map[string]string {
	if s.kind == "PodCliqueSet" {
		return map[string]string{lockstepv1alpha1.LabelPodCliqueSet: s.name}
	}
	return map[string]string{appLabel: s.name}
}

// waitPods waits until the watcher sees cond.
func (s *story) waitPods(w *fleetwatch.PodWatcher, what string, cond func(fleetwatch.PodCounts) bool) {
	s.t.Helper()
	if err := w.WaitFor(s.ctx, stepTimeout, cond); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// startRollout moves the template to newImage.
func (s *story) startRollout() time.Time {
	s.t.Helper()
	s.update("starting the rollout", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.Template = s.template(newImage) })
	return time.Now()
}

// finish waits until the rollout is complete with updated units on the new
// image and every pod available, as the hub and the watcher both see it.
func (s *story) finish(w *fleetwatch.PodWatcher, updated int) *fleetv1alpha1.FederatedWorkload {
	s.t.Helper()
	fw := s.waitFor(fmt.Sprintf("the rollout complete with %d updated", updated), func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return complete(fw) && fw.Status.UpdatedReplicas == int32(updated) && fw.Status.AvailableReplicas == 10
	})
	s.waitPods(w, "the watcher seeing the end state", func(c fleetwatch.PodCounts) bool {
		return c.Pods == 10 && c.Available == 10 && c.Updated == updated && c.Terminating == 0
	})
	return fw
}

// checkWatcher fails the test on any state the watcher saw outside the bounds.
func (s *story) checkWatcher(w *fleetwatch.PodWatcher) {
	s.t.Helper()
	peak, minAvail := w.Extremes()
	s.t.Logf("watcher: at most %d pods (%d terminating and %d above their ReplicaSet's replicas besides), at least %d available, at most %d updated, %d pods created",
		peak.Pods, peak.Terminating, peak.Surplus, minAvail, peak.Updated, w.Created())
	v := w.Violations()
	if len(v) == 0 {
		return
	}
	for i, x := range v {
		if i == 10 {
			s.t.Errorf("... and %d more", len(v)-10)
			break
		}
		s.t.Errorf("watcher: %s", x)
	}
}

// memberObject reads the member object in member m.
func (s *story) memberObject(m string) client.Object {
	s.t.Helper()
	var obj client.Object = &appsv1.Deployment{}
	switch s.kind {
	case "StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "PodCliqueSet":
		obj = &lockstepv1alpha1.PodCliqueSet{}
	}
	if err := s.members[m].Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: s.name}, obj); err != nil {
		s.t.Fatalf("reading the member object in %s: %v", m, err)
	}
	return obj
}

func (s *story) memberUIDs() map[string]types.UID {
	s.t.Helper()
	out := map[string]types.UID{}
	for _, m := range memberNames {
		out[m] = s.memberObject(m).GetUID()
	}
	return out
}

// statusYAML is the workload's status as `kubectl get -o yaml` prints it.
func statusYAML(fw *fleetv1alpha1.FederatedWorkload) string {
	out, err := yaml.Marshal(map[string]any{"status": fw.Status})
	if err != nil {
		return err.Error()
	}
	return string(out)
}

func intOrStr(i int32) *intstr.IntOrString {
	v := intstr.FromInt32(i)
	return &v
}

func clusterEntry(fw *fleetv1alpha1.FederatedWorkload, name string) *fleetv1alpha1.FederatedClusterStatus {
	for i := range fw.Status.Clusters {
		if fw.Status.Clusters[i].Name == name {
			return &fw.Status.Clusters[i]
		}
	}
	return nil
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
