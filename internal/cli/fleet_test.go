package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The fleet's verbs run against a hub: a second apiserver with the fleet CRDs
// and the hub's validating webhooks (testenv.StartHub), started by the first
// test that needs it. No hub controller runs: the tests write the statuses
// the hub would, through the status subresource.
var (
	hub     *testenv.Cluster
	hubKC   string
	hubOnce sync.Once
	hubErr  error
)

func startHub(t *testing.T) {
	t.Helper()
	hubOnce.Do(func() {
		if hub, hubErr = testenv.StartHub(); hubErr == nil {
			hubKC = filepath.Join(tmpDir, "hub-kubeconfig")
			hubErr = writeKubeconfig(hub.Config, hubKC)
		}
	})
	if hubErr != nil {
		t.Fatal(hubErr)
	}
}

func stopHub() {
	if hub != nil {
		_ = hub.Stop()
	}
}

// hubRun runs a verb against the hub and checks its exit status.
func hubRun(t *testing.T, ns string, want int, args ...string) string {
	t.Helper()
	var out syncBuffer
	all, code := runOn(t.Context(), hubKC, &out, ns, args...)
	if code != want {
		t.Fatalf("%s: exit status %d, want %d; output:\n%s", strings.Join(args, " "), code, want, all)
	}
	return all
}

const fwDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"tier":"web"}},"spec":{
"selector":{"matchLabels":{"app":"web"}},"minReadySeconds":5,
"template":{"metadata":{"labels":{"app":"web"},"annotations":{"team":"shop"}},"spec":{"containers":[{"name":"web","image":"web:v1","ports":[{"containerPort":8080}]}]}}}}`

const fwPodCliqueSet = `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{"template":{
"cliques":[
 {"name":"frontend","replicas":2,"template":{"spec":{"containers":[{"name":"f","image":"fe:v1"}]}}},
 {"name":"prefill-leader","template":{"metadata":{"labels":{"role":"leader"}},"spec":{"containers":[{"name":"l","image":"engine:v1"}]}}},
 {"name":"prefill-worker","replicas":2,"template":{"spec":{"containers":[{"name":"w","image":"engine:v1"}]}}}],
"podCliqueScalingGroups":[{"name":"prefill","cliqueNames":["prefill-leader","prefill-worker"],"replicas":2}]}}}`

// newFW creates a FederatedWorkload of template in a namespace of its own on
// the hub; edit may change its spec first.
func newFW(t *testing.T, template string, edit func(*fleetv1alpha1.FederatedWorkload)) (string, *fleetv1alpha1.FederatedWorkload) {
	t.Helper()
	startHub(t)
	ctx := t.Context()
	ns := fmt.Sprintf("fleet-%d", nsCounter.Add(1))
	if err := hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	mu, ms := intstr.FromInt32(2), intstr.FromInt32(1)
	fw := &fleetv1alpha1.FederatedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	fw.Spec.PlacementRef.Name = "gpu-clusters"
	fw.Spec.Replicas = 10
	fw.Spec.Template = runtime.RawExtension{Raw: []byte(template)}
	fw.Spec.RolloutStrategy = fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms}
	if strings.Contains(template, "PodCliqueSet") {
		fw.Spec.RolloutStrategy.MaxSurge = new(intstr.FromInt32(0))
	}
	if edit != nil {
		edit(fw)
	}
	if err := hub.Client.Create(ctx, fw); err != nil {
		t.Fatal(err)
	}
	return ns, fw
}

func rereadFW(t *testing.T, fw *fleetv1alpha1.FederatedWorkload) *fleetv1alpha1.FederatedWorkload {
	t.Helper()
	out := &fleetv1alpha1.FederatedWorkload{}
	if err := hub.Client.Get(t.Context(), client.ObjectKeyFromObject(fw), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// hubStatus is a status the hub writes: a Progressing reason, with Available,
// Paused, Reconciling and Stalled as the hub derives them.
func hubStatus(reason fleetv1alpha1.FederatedWorkloadReason, msg string) []metav1.Condition {
	now := metav1.Now()
	c := func(t fleetv1alpha1.FederatedWorkloadConditionType, s metav1.ConditionStatus, reason fleetv1alpha1.FederatedWorkloadReason, msg string) metav1.Condition {
		return metav1.Condition{Type: string(t), Status: s, Reason: string(reason), Message: msg, LastTransitionTime: now}
	}
	prog, reconciling, stalled, paused := metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse
	pausedReason := fleetv1alpha1.FederatedWorkloadReasonRolloutNotPaused
	switch reason {
	case fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress:
		prog, reconciling = metav1.ConditionTrue, metav1.ConditionTrue
	case fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict, fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound,
		fleetv1alpha1.FederatedWorkloadReasonMaxFailuresExceeded:
		stalled = metav1.ConditionTrue
	case fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAwaitingApproval):
		prog = metav1.ConditionTrue
	case fleetv1alpha1.FederatedWorkloadReasonRolloutPaused:
		paused, pausedReason = metav1.ConditionTrue, reason
	}
	return []metav1.Condition{
		c(fleetv1alpha1.FederatedWorkloadAvailable, metav1.ConditionTrue, fleetv1alpha1.FederatedWorkloadReasonMinimumAvailable, "9 of 10 pods available, at least 8 needed"),
		c(fleetv1alpha1.FederatedWorkloadProgressing, prog, reason, msg),
		c(fleetv1alpha1.FederatedWorkloadPaused, paused, pausedReason, "set by the test"),
		c(fleetv1alpha1.FederatedWorkloadReconciling, reconciling, reason, msg),
		c(fleetv1alpha1.FederatedWorkloadStalled, stalled, reason, msg),
	}
}

// setFWStatus writes the status the hub would for the current generation.
func setFWStatus(t *testing.T, fw *fleetv1alpha1.FederatedWorkload, reason fleetv1alpha1.FederatedWorkloadReason, msg string, edit func(*fleetv1alpha1.FederatedWorkloadStatus)) {
	t.Helper()
	cur := rereadFW(t, fw)
	cur.Status.ObservedGeneration = cur.Generation
	cur.Status.UpdateRevision = "rev-2"
	cur.Status.Replicas, cur.Status.UpdatedReplicas, cur.Status.AvailableReplicas = 10, 4, 9
	cur.Status.Conditions = hubStatus(reason, msg)
	if edit != nil {
		edit(&cur.Status)
	}
	if err := hub.Client.Status().Update(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
}

func TestFederated_StatusExitCodesFromTheHubsConditions(t *testing.T) {
	cases := []struct {
		name   string
		spec   func(*fleetv1alpha1.FederatedWorkload)
		reason fleetv1alpha1.FederatedWorkloadReason
		status func(*fleetv1alpha1.FederatedWorkloadStatus)
		code   int
		says   string
	}{
		{name: "complete", reason: fleetv1alpha1.FederatedWorkloadReasonRolloutComplete,
			status: func(st *fleetv1alpha1.FederatedWorkloadStatus) { st.UpdatedReplicas, st.AvailableReplicas = 10, 10 },
			code:   verdict.Complete, says: "RolloutComplete"},
		{name: "in progress", reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, code: verdict.TimedOut, says: "RolloutInProgress"},
		{name: "paused", reason: fleetv1alpha1.FederatedWorkloadReasonRolloutPaused, code: verdict.Halted, says: "RolloutPaused"},
		{name: "member object conflict", reason: fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict, code: verdict.Failed, says: "MemberObjectConflict"},
		{name: "awaiting approval at a stage gate", reason: fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAwaitingApproval), code: verdict.Halted, says: "AwaitingApproval"},
		{name: "halted past maxFailures", reason: fleetv1alpha1.FederatedWorkloadReasonMaxFailuresExceeded, code: verdict.Failed, says: "MaxFailuresExceeded"},
		{name: "placement not found", reason: fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound, code: verdict.Failed, says: "PlacementNotFound"},
		{name: "partition reached", spec: func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.RolloutStrategy.Partition = 6 },
			reason: fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, code: verdict.Halted, says: "partition 6 reached"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, fw := newFW(t, fwDeployment, tc.spec)
			setFWStatus(t, fw, tc.reason, "set by the test", tc.status)
			out := hubRun(t, ns, tc.code, "status", "fw/web", "--watch=false")
			if !strings.Contains(out, tc.says) {
				t.Errorf("status --watch=false printed %q, no %q", out, tc.says)
			}
			out = hubRun(t, ns, tc.code, "status", "federatedworkload/web", "--timeout", "2s")
			if !strings.Contains(out, tc.says) {
				t.Errorf("status printed %q, no %q", out, tc.says)
			}
		})
	}
	t.Run("generation not yet observed", func(t *testing.T) {
		ns, fw := newFW(t, fwDeployment, nil)
		setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, "set by the test", nil)
		cur := rereadFW(t, fw)
		cur.Spec.Replicas = 12
		if err := hub.Client.Update(t.Context(), cur); err != nil {
			t.Fatal(err)
		}
		if out := hubRun(t, ns, verdict.TimedOut, "status", "fw/web", "--watch=false"); !strings.Contains(out, "observe generation 2") {
			t.Errorf("status of a spec the hub has not seen printed %q", out)
		}
	})
	t.Run("not found and superseded", func(t *testing.T) {
		ns, fw := newFW(t, fwDeployment, nil)
		hubRun(t, ns, verdict.Usage, "status", "fw/nope")
		setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, "set by the test", nil)
		hubRun(t, ns, verdict.Failed, "status", "fw/web", "--revision", "rev-1", "--timeout", "5s")
		hubRun(t, ns, verdict.TimedOut, "status", "fw/web", "--revision", "rev-2", "--timeout", "1s")
	})
	t.Run("follows the rollout to its end", func(t *testing.T) {
		ns, fw := newFW(t, fwDeployment, nil)
		setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, "4 of 10 pods updated", nil)
		out, code := awaitCodeOn(t, hubKC, ns, func() {
			setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, "10 of 10 pods updated; nothing left to do", nil)
		}, "status", "fw/web", "--timeout", "20s")
		if code != verdict.Complete || !strings.Contains(out, "RolloutInProgress: 4 of 10") || !strings.Contains(out, "RolloutComplete: 10 of 10") {
			t.Errorf("status across the end of a rollout: exit %d, output %q", code, out)
		}
	})
	t.Run("deleted while watching", func(t *testing.T) {
		ns, fw := newFW(t, fwDeployment, nil)
		setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, "set by the test", nil)
		out, code := awaitCodeOn(t, hubKC, ns, func() {
			if err := hub.Client.Delete(t.Context(), fw); err != nil {
				t.Error(err)
			}
		}, "status", "fw/web", "--timeout", "20s")
		if code != verdict.Failed || !strings.Contains(out, "deleted") {
			t.Errorf("status of a deleted FederatedWorkload: exit %d, output %q", code, out)
		}
	})
}

// specJSON is fw's spec as a JSON map, for comparing what a verb changed.
func specJSON(t *testing.T, fw *fleetv1alpha1.FederatedWorkload) map[string]any {
	t.Helper()
	b, err := json.Marshal(fw.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFederated_PauseResume_WriteOnlyRolloutStrategyPaused(t *testing.T) {
	ns, fw := newFW(t, fwDeployment, nil)
	before := rereadFW(t, fw)
	if out := hubRun(t, ns, 0, "pause", "fw/web"); !strings.Contains(out, "federatedworkload/web paused") {
		t.Errorf("pause said %q", out)
	}
	paused := rereadFW(t, fw)
	if !paused.Spec.RolloutStrategy.Paused {
		t.Fatal("pause left spec.rolloutStrategy.paused false")
	}
	want := before.DeepCopy()
	want.Spec.RolloutStrategy.Paused = true
	if got, w := specJSON(t, paused), specJSON(t, want); !reflect.DeepEqual(got, w) {
		t.Errorf("pause changed more than spec.rolloutStrategy.paused:\n got %v\nwant %v", got, w)
	}
	if !reflect.DeepEqual(paused.Labels, before.Labels) || !reflect.DeepEqual(paused.Annotations, before.Annotations) {
		t.Errorf("pause changed the metadata: %v %v", paused.Labels, paused.Annotations)
	}
	hubRun(t, ns, 0, "resume", "federatedworkload/web")
	resumed := rereadFW(t, fw)
	if resumed.Spec.RolloutStrategy.Paused {
		t.Fatal("resume left spec.rolloutStrategy.paused true")
	}
	if got, w := specJSON(t, resumed), specJSON(t, before); !reflect.DeepEqual(got, w) {
		t.Errorf("pause and resume did not give the spec back:\n got %v\nwant %v", got, w)
	}
	hubRun(t, ns, verdict.Usage, "pause", "placement/gpu-clusters")
}

// template is a FederatedWorkload's member template as a map.
func template(t *testing.T, fw *fleetv1alpha1.FederatedWorkload) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fw.Spec.Template.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// dig follows map keys into m; nil where one is missing.
func dig(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

// restartStamp takes the restart annotation out of a pod template and
// returns it ("" when there was none), dropping maps it leaves empty.
func restartStamp(podTemplate any) string {
	md, _ := dig(podTemplate, "metadata").(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	stamp, _ := ann[AnnotationRestartedAt].(string)
	delete(ann, AnnotationRestartedAt)
	if ann != nil && len(ann) == 0 {
		delete(md, "annotations")
	}
	if md != nil && len(md) == 0 {
		delete(podTemplate.(map[string]any), "metadata")
	}
	return stamp
}

func TestFederated_Restart_StampsOnlyThePodTemplate(t *testing.T) {
	t.Run("Deployment template", func(t *testing.T) {
		ns, fw := newFW(t, fwDeployment, nil)
		before := rereadFW(t, fw)
		start := time.Now().UTC().Truncate(time.Second)
		// The hub's webhook admits the stamped template, or the verb fails.
		hubRun(t, ns, 0, "restart", "fw/web")
		after := rereadFW(t, fw)
		got := template(t, after)
		stamp := restartStamp(dig(got, "spec", "template"))
		at, err := time.Parse(time.RFC3339, stamp)
		if err != nil || at.Before(start) {
			t.Fatalf("restart stamped %s=%q on the pod template (%v), want a time from now on", AnnotationRestartedAt, stamp, err)
		}
		if want := template(t, before); !reflect.DeepEqual(got, want) {
			t.Errorf("restart changed the template beyond the annotation:\n got %v\nwant %v", got, want)
		}
		if a := dig(got, "metadata", "annotations"); a != nil {
			t.Errorf("restart annotated the member object itself: %v", a)
		}
		b, a := before.DeepCopy(), after.DeepCopy()
		b.Spec.Template, a.Spec.Template = runtime.RawExtension{}, runtime.RawExtension{}
		if !reflect.DeepEqual(specJSON(t, a), specJSON(t, b)) {
			t.Errorf("restart changed the spec beyond the template")
		}
		hubRun(t, ns, verdict.Usage, "restart", "fw/web", "--role", "web")
	})
	t.Run("PodCliqueSet template, one role", func(t *testing.T) {
		ns, fw := newFW(t, fwPodCliqueSet, nil)
		before := template(t, rereadFW(t, fw))
		hubRun(t, ns, 0, "restart", "fw/web", "--role", "prefill")
		got := template(t, rereadFW(t, fw))
		var stamped []string
		for _, c := range dig(got, "spec", "template", "cliques").([]any) {
			if restartStamp(dig(c, "template")) != "" {
				stamped = append(stamped, dig(c, "name").(string))
			}
		}
		if fmt.Sprint(stamped) != "[prefill-leader prefill-worker]" {
			t.Errorf("restart --role prefill stamped %v", stamped)
		}
		if !reflect.DeepEqual(got, before) {
			t.Errorf("restart --role prefill changed the template beyond the annotations:\n got %v\nwant %v", got, before)
		}
		hubRun(t, ns, verdict.Usage, "restart", "fw/web", "--role", "prefill-worker")
		hubRun(t, ns, verdict.Usage, "restart", "fw/web", "--role", "nope")
		hubRun(t, ns, 0, "restart", "fw/web")
		n := 0
		for _, c := range dig(template(t, rereadFW(t, fw)), "spec", "template", "cliques").([]any) {
			if restartStamp(dig(c, "template")) != "" {
				n++
			}
		}
		if n != 3 {
			t.Errorf("restart stamped %d cliques, want all 3", n)
		}
	})
}

func TestFederated_Promote_LowersTheFleetPartition(t *testing.T) {
	ns, fw := newFW(t, fwDeployment, func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.RolloutStrategy.Partition = 3 })
	partition := func() int32 { return rereadFW(t, fw).Spec.RolloutStrategy.Partition }
	hubRun(t, ns, 0, "promote", "fw/web")
	if p := partition(); p != 2 {
		t.Errorf("partition %d after promote from 3, want 2", p)
	}
	hubRun(t, ns, 0, "promote", "fw/web", "--full")
	if p := partition(); p != 0 {
		t.Errorf("partition %d after --full", p)
	}
	hubRun(t, ns, verdict.Failed, "promote", "fw/web")
}

// approve fw/NAME approves the stage gate the hub says the rollout waits
// at, for the revision it rolls out, or a gate named ahead of time.
func TestFederated_ApproveNamesTheRevisionAndTheStageGate(t *testing.T) {
	ns, fw := newFW(t, fwDeployment, nil)
	approval := func() string { return rereadFW(t, fw).Annotations[v1alpha1.AnnotationApprovedRevision] }
	setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, "set by the test", nil)
	if out := hubRun(t, ns, verdict.Failed, "approve", "fw/web"); !strings.Contains(out, "waits at no gate") || approval() != "" {
		t.Errorf("approve with no gate waiting said %q and wrote %q", out, approval())
	}
	setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAwaitingApproval), "gate stage-canary-0 awaits approval", func(st *fleetv1alpha1.FederatedWorkloadStatus) {
		st.Gate = &v1alpha1.GateStatus{Name: "stage-canary-0", Reason: v1alpha1.ReasonAwaitingApproval, ReachedAt: metav1.Now()}
	})
	if out := hubRun(t, ns, 0, "approve", "fw/web"); !strings.Contains(out, "federatedworkload/web approved: rev-2@stage-canary-0") {
		t.Errorf("approve said %q", out)
	}
	if got := approval(); got != "rev-2@stage-canary-0" {
		t.Errorf("annotation %q", got)
	}
	hubRun(t, ns, 0, "approve", "federatedworkload/web", "--gate", "stage-group-1")
	if got := approval(); got != "rev-2@stage-group-1" {
		t.Errorf("annotation %q after --gate", got)
	}
}

func TestFederated_HistoryAndUndoSayThereIsNoHistory(t *testing.T) {
	ns, fw := newFW(t, fwDeployment, nil)
	before := rereadFW(t, fw)
	for _, verb := range []string{"history", "undo"} {
		out := hubRun(t, ns, verdict.Usage, verb, "fw/web")
		if !strings.Contains(out, "keeps no revision history") || !strings.Contains(out, "apply the previous spec.template") {
			t.Errorf("%s fw/web said %q", verb, out)
		}
	}
	if after := rereadFW(t, fw); after.ResourceVersion != before.ResourceVersion {
		t.Error("history or undo wrote the FederatedWorkload")
	}
}

func TestFederated_GetDrawsTheFleetAndFollowsIt(t *testing.T) {
	ns, fw := newFW(t, fwDeployment, nil)
	midRollout := func(st *fleetv1alpha1.FederatedWorkloadStatus) {
		st.Clusters = []fleetv1alpha1.FederatedClusterStatus{
			{Name: "eu-1", DesiredReplicas: 4, Replicas: 5, UpdatedReplicas: 4, AvailableReplicas: 3,
				Grant: fleetv1alpha1.MemberGrant{Started: true, MaxUnavailable: 1, MaxSurge: 1}, Waiting: "1 pod not ready"},
			{Name: "us-1", DesiredReplicas: 6, Replicas: 6, AvailableReplicas: 6, Waiting: "no budget left to start"},
		}
		st.Replicas, st.UpdatedReplicas, st.AvailableReplicas = 11, 4, 9
	}
	setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
		"4 of 10 pods updated; waiting for cluster eu-1: 1 pod not ready; cluster us-1: no budget left to start", midRollout)
	out := hubRun(t, ns, 0, "get", "fw/web", "--no-color")
	for _, want := range []string{
		"FederatedWorkload " + ns + "/web", "Progressing (RolloutInProgress): 4 of 10 pods updated", "images     web:v1",
		"◐ web", "rev rev-2", "updated 4/10", "maxUnavailable 2 (1 used)", "maxSurge 1 (1 used)",
		"├─ ◐ eu-1", "share 4  started, maxUnavailable 1, maxSurge 1  updated 4/4  available 3/4  1 pod not ready",
		"└─ ✔ us-1", "not started", "no budget left to start",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("get fw/web printed no %q:\n%s", want, out)
		}
	}
	var obj fleetv1alpha1.FederatedWorkload
	if err := json.Unmarshal([]byte(hubRun(t, ns, 0, "get", "fw", "web", "-o", "json")), &obj); err != nil || obj.Kind != "FederatedWorkload" || obj.Name != "web" {
		t.Errorf("get fw web -o json: %v, %s %s", err, obj.Kind, obj.Name)
	}
	hubRun(t, ns, verdict.Usage, "get", "fw/web", "--pods")
	hubRun(t, ns, verdict.Usage, "get", "fw/nope")
	// -w redraws when the hub writes, and --until-done ends it with the verdict.
	out, code := awaitCodeOn(t, hubKC, ns, func() {
		setFWStatus(t, fw, fleetv1alpha1.FederatedWorkloadReasonRolloutComplete, "10 of 10 pods updated; nothing left to do",
			func(st *fleetv1alpha1.FederatedWorkloadStatus) {
				midRollout(st)
				for i := range st.Clusters {
					c := &st.Clusters[i]
					c.Replicas, c.UpdatedReplicas, c.AvailableReplicas, c.Waiting = c.DesiredReplicas, c.DesiredReplicas, c.DesiredReplicas, ""
					c.Grant = fleetv1alpha1.MemberGrant{Started: true, Paused: true, MaxUnavailable: 1}
				}
				st.Replicas, st.UpdatedReplicas, st.AvailableReplicas = 10, 10, 10
			})
	}, "get", "fw/web", "-w", "--until-done", "--timeout", "20s")
	frames := strings.Split(out, "\n--- ")
	if code != 0 || len(frames) != 2 || !strings.Contains(frames[0], "Progressing") || !strings.Contains(frames[1], "Complete (RolloutComplete)") ||
		!strings.Contains(frames[1], "├─ ✔ eu-1") || !strings.Contains(frames[1], "started, done") {
		t.Errorf("get -w --until-done across the end of a rollout: exit %d, %d frames:\n%s", code, len(frames), out)
	}
}

func TestPlacement_GetDrawsGroupsSlicesAndClusters(t *testing.T) {
	startHub(t)
	ctx := t.Context()
	ns := fmt.Sprintf("fleet-%d", nsCounter.Add(1))
	if err := hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpu"}}
	pl.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = []fleetv1alpha1.DecisionGroup{{GroupName: "canary",
		GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"stage": "canary"}}}}
	if err := hub.Client.Create(ctx, pl); err != nil {
		t.Fatal(err)
	}
	// Cluster-scoped, so named after the test's namespace.
	name := func(c string) string { return ns + "-" + c }
	for i, c := range []string{"a", "b", "c"} {
		mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name(c)}}
		mc.Spec.KubeconfigSecretRef = fleetv1alpha1.KubeconfigSecretReference{Namespace: testenv.FleetNamespace, Name: name(c)}
		if err := hub.Client.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		mc.Status.Conditions = []metav1.Condition{{Type: string(fleetv1alpha1.MemberClusterReady), Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		if i == 2 {
			mc.Status.Conditions[0].Status, mc.Status.Conditions[0].Reason = metav1.ConditionFalse, string(fleetv1alpha1.MemberClusterReasonAPIServerNotReady)
		}
		if err := hub.Client.Status().Update(ctx, mc); err != nil {
			t.Fatal(err)
		}
	}
	slice := func(n int, group, index string, clusters ...string) {
		d := &fleetv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gpu-decision-%d", n), Labels: map[string]string{
			fleetv1alpha1.LabelPlacement: "gpu", fleetv1alpha1.LabelDecisionGroupName: group, fleetv1alpha1.LabelDecisionGroupIndex: index,
		}}}
		if err := hub.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: name(c)})
		}
		if err := hub.Client.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	slice(1, "canary", "0", "a")
	slice(2, "", "1", "b", "c")
	slice(3, "", "1", "c") // a spill slice while the decisions surge
	setSettled := func(settled bool) {
		cur := &fleetv1alpha1.Placement{}
		if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(pl), cur); err != nil {
			t.Fatal(err)
		}
		st, reason := metav1.ConditionFalse, "Surging"
		if settled {
			st, reason = metav1.ConditionTrue, "Settled"
		}
		notSt := map[metav1.ConditionStatus]metav1.ConditionStatus{metav1.ConditionTrue: metav1.ConditionFalse, metav1.ConditionFalse: metav1.ConditionTrue}[st]
		now := metav1.Now()
		cur.Status = fleetv1alpha1.PlacementStatus{
			ObservedGeneration: cur.Generation, NumberOfSelectedClusters: 3, NumberOfDecisionGroups: 2,
			DecisionGroups: []fleetv1alpha1.DecisionGroupStatus{
				{DecisionGroupIndex: 0, DecisionGroupName: "canary", Decisions: []string{"gpu-decision-1"}, ClusterCount: 1},
				{DecisionGroupIndex: 1, Decisions: []string{"gpu-decision-2"}, ClusterCount: 2},
			},
			Conditions: []metav1.Condition{
				{Type: string(fleetv1alpha1.PlacementClusterSetsBound), Status: metav1.ConditionTrue, Reason: "ClusterSetsBound", Message: "bound", LastTransitionTime: now},
				{Type: string(fleetv1alpha1.PlacementDecisionsSettled), Status: st, Reason: reason, Message: "set by the test", LastTransitionTime: now},
				{Type: string(fleetv1alpha1.PlacementReconciling), Status: notSt, Reason: reason, Message: "set by the test", LastTransitionTime: now},
				{Type: string(fleetv1alpha1.PlacementStalled), Status: metav1.ConditionFalse, Reason: "ClusterSetsBound", Message: "bound", LastTransitionTime: now},
			},
		}
		if err := hub.Client.Status().Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	setSettled(false)
	out := hubRun(t, ns, 0, "get", "placement/gpu", "--no-color")
	for _, want := range []string{
		"Placement " + ns + "/gpu", "Settling (Surging)", "◐ gpu", "3 clusters selected  2 decision groups  3 slices",
		"├─ ✔ group 0 canary", "│  └─ ✔ gpu-decision-1", "✔ " + name("a"), "└─ ◐ group 1 (rest)", "gpu-decision-2",
		"✖ " + name("c"), "not Ready (APIServerNotReady)", "also in gpu-decision-3", "└─ ◐ gpu-decision-3", "extra: goes once settled",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("get placement/gpu printed no %q:\n%s", want, out)
		}
	}
	hubRun(t, ns, verdict.TimedOut, "status", "placement/gpu", "--watch=false")
	setSettled(true)
	if out := hubRun(t, ns, 0, "status", "placement/gpu", "--timeout", "10s"); !strings.Contains(out, "Settled") {
		t.Errorf("status of a settled placement printed %q", out)
	}
	// -w watches the placement, its slices and the MemberClusters (cluster
	// scoped) and ends once settled with --until-done.
	if out := hubRun(t, ns, 0, "get", "placement", "gpu", "-w", "--until-done", "--timeout", "15s"); !strings.Contains(out, "Settled (Settled)") || !strings.Contains(out, "✖ "+name("c")) {
		t.Errorf("get placement -w --until-done on a settled placement printed:\n%s", out)
	}
	hubRun(t, ns, verdict.Usage, "get", "placement/nope")
}
