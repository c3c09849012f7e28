package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// env is a real kube-apiserver and etcd with Lockstep's CRDs and no operator:
// the tests check what the verbs write and read, and play the operator's part
// where a verb waits for it.
var (
	env        *testenv.Env
	kubeconfig string
	nsCounter  atomic.Int32
	tmpDir     string
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "cli: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "lockstep-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tmpDir = dir
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(env.Config, kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopHub()
	return m.Run()
}

// writeKubeconfig writes an admin kubeconfig for cfg's cluster to path.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// run runs a verb as the binary would, in namespace ns, and returns its output
// and exit status.
func run(ctx context.Context, ns string, args ...string) (string, int) {
	var out syncBuffer
	return runTo(ctx, &out, ns, args...)
}

// syncBuffer is output a test may read while the verb still writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func runTo(ctx context.Context, out *syncBuffer, ns string, args ...string) (string, int) {
	return runOn(ctx, kubeconfig, out, ns, args...)
}

// runOn runs a verb against the cluster of the kubeconfig kc.
func runOn(ctx context.Context, kc string, out *syncBuffer, ns string, args ...string) (string, int) {
	var errOut bytes.Buffer
	root := &cobra.Command{Use: "lockstep", SilenceErrors: true, SilenceUsage: true}
	root.AddGroup(Group)
	root.AddCommand(Commands(out)...)
	root.SetArgs(append(args, "--kubeconfig", kc, "-n", ns))
	code := ExitCode(root.ExecuteContext(ctx), &errOut)
	return out.String() + errOut.String(), code
}

// newPCS creates the disaggregated example in a namespace of its own.
func newPCS(t *testing.T) (ns string, pcs *v1alpha1.PodCliqueSet) {
	t.Helper()
	ctx := t.Context()
	ns = fmt.Sprintf("cli-%d", nsCounter.Add(1))
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "disaggregated.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pcs = &v1alpha1.PodCliqueSet{}
	if err := yaml.Unmarshal(data, pcs); err != nil {
		t.Fatal(err)
	}
	pcs.Namespace = ns
	if err := env.Client.Create(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	return ns, pcs
}

func reread(t *testing.T, pcs *v1alpha1.PodCliqueSet) *v1alpha1.PodCliqueSet {
	t.Helper()
	out := &v1alpha1.PodCliqueSet{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pcs), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// setProgressing writes the status the operator would: observed, with a
// Progressing condition.
func setProgressing(t *testing.T, pcs *v1alpha1.PodCliqueSet, status metav1.ConditionStatus, reason v1alpha1.ConditionReason) {
	t.Helper()
	cur := reread(t, pcs)
	cur.Status.ObservedGeneration = cur.Generation
	cur.Status.UpdateRevision = pcs.Name + "-v2"
	cur.Status.CurrentRevision = pcs.Name + "-v1"
	cur.Status.Conditions = []metav1.Condition{{
		Type: string(v1alpha1.ConditionProgressing), Status: status, Reason: string(reason), Message: "set by the test",
		LastTransitionTime: metav1.Now(),
	}}
	if err := env.Client.Status().Update(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
}

func mustRun(t *testing.T, ns string, want int, args ...string) string {
	t.Helper()
	out, code := run(t.Context(), ns, args...)
	if code != want {
		t.Fatalf("%s: exit status %d, want %d; output:\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

func TestPauseResume_WriteSpecPaused(t *testing.T) {
	ns, pcs := newPCS(t)
	mustRun(t, ns, 0, "pause", pcs.Name)
	if !reread(t, pcs).Spec.Paused {
		t.Error("pause left spec.paused false")
	}
	mustRun(t, ns, 0, "resume", "pcs/"+pcs.Name)
	if reread(t, pcs).Spec.Paused {
		t.Error("resume left spec.paused true")
	}
}

func TestPromote_LowersThePartition(t *testing.T) {
	ns, pcs := newPCS(t)
	partition := func() int32 {
		ru := reread(t, pcs).Spec.UpdateStrategy.RollingUpdate
		if ru == nil || ru.Partition == nil {
			return 0
		}
		return *ru.Partition
	}
	if out := mustRun(t, ns, 1, "promote", pcs.Name); !strings.Contains(out, "nothing is held back") {
		t.Errorf("promote at partition 0 said %q", out)
	}
	mustRun(t, ns, 0, "promote", pcs.Name, "--partition", "2")
	if p := partition(); p != 2 {
		t.Errorf("partition %d after --partition 2", p)
	}
	mustRun(t, ns, 0, "promote", pcs.Name)
	if p := partition(); p != 1 {
		t.Errorf("partition %d after a plain promote from 2, want 1", p)
	}
	mustRun(t, ns, 0, "promote", pcs.Name, "--full")
	if p := partition(); p != 0 {
		t.Errorf("partition %d after --full", p)
	}
	mustRun(t, ns, verdict.Usage, "promote", pcs.Name, "--full", "--partition", "1")
}

func TestApprove_NamesTheRevisionAndTheGateWaiting(t *testing.T) {
	ns, pcs := newPCS(t)
	approval := func() string { return reread(t, pcs).Annotations[v1alpha1.AnnotationApprovedRevision] }
	if out := mustRun(t, ns, 1, "approve", pcs.Name); !strings.Contains(out, "waits at no gate") {
		t.Errorf("approve with no gate waiting said %q", out)
	}
	if got := approval(); got != "" {
		t.Fatalf("a refused approve wrote %q", got)
	}
	// the operator's part: the rollout to v2 waits at replicas-1
	live := reread(t, pcs)
	live.Status.UpdateRevision = "web-v2"
	live.Status.UpdateProgress = &v1alpha1.PodCliqueSetUpdateProgress{Gate: &v1alpha1.GateStatus{Name: "replicas-1",
		Reason: v1alpha1.ReasonAwaitingApproval, ReachedAt: metav1.Now()}}
	if err := env.Client.Status().Update(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, ns, 0, "approve", pcs.Name); !strings.Contains(out, "approved: web-v2@replicas-1") {
		t.Errorf("approve said %q", out)
	}
	if got := approval(); got != "web-v2@replicas-1" {
		t.Errorf("annotation %q, want web-v2@replicas-1", got)
	}
	mustRun(t, ns, 0, "approve", pcs.Name, "--gate", "replicas-2")
	if got := approval(); got != "web-v2@replicas-2" {
		t.Errorf("annotation %q after --gate replicas-2", got)
	}
	mustRun(t, ns, verdict.Usage, "approve", "pl/"+pcs.Name)
}

func TestRestart_StampsThePodTemplatesOfTheRole(t *testing.T) {
	ns, pcs := newPCS(t)
	stamped := func() []string {
		var out []string
		for _, c := range reread(t, pcs).Spec.Template.Cliques {
			if c.Template.Annotations[AnnotationRestartedAt] != "" {
				out = append(out, c.Name)
			}
		}
		return out
	}
	mustRun(t, ns, 0, "restart", pcs.Name, "--role", "prefill")
	if got := fmt.Sprint(stamped()); got != "[prefill-leader prefill-worker]" {
		t.Errorf("restart --role prefill stamped %s", got)
	}
	mustRun(t, ns, verdict.Usage, "restart", pcs.Name, "--role", "decode-worker")
	mustRun(t, ns, verdict.Usage, "restart", pcs.Name, "--role", "nope")
	mustRun(t, ns, 0, "restart", pcs.Name)
	if got := len(stamped()); got != 5 {
		t.Errorf("restart stamped %d cliques, want all 5", got)
	}
}

func TestHistory_ListsRevisionsAndDiffsOne(t *testing.T) {
	ns, pcs := newPCS(t)
	ctx := t.Context()
	v2 := reread(t, pcs)
	for i := range v2.Spec.Template.Cliques {
		c := &v2.Spec.Template.Cliques[i].Template.Spec.Containers[0]
		c.Image = strings.Replace(c.Image, ":v1", ":v2", 1)
	}
	for n, p := range []*v1alpha1.PodCliqueSet{pcs, v2} {
		cr, err := revision.NewControllerRevision(p, rollout.SetRevision{Name: fmt.Sprintf("%s-v%d", pcs.Name, n+1)}, int64(n+1))
		if err != nil {
			t.Fatal(err)
		}
		cr.Namespace = ns
		if err := env.Client.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Update(ctx, v2); err != nil {
		t.Fatal(err)
	}
	setProgressing(t, pcs, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress)
	out := mustRun(t, ns, 0, "history", pcs.Name)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("history printed %d lines, want a header and 2 revisions:\n%s", len(lines), out)
	}
	for i, want := range []string{"1 disagg-v1 current frontend=lockstep-examples/llm-frontend:v1", "2 disagg-v2 update frontend=lockstep-examples/llm-frontend:v2"} {
		f := strings.Fields(lines[i+1])
		if got := strings.Join([]string{f[0], f[1], f[3], f[4]}, " "); got != want {
			t.Errorf("revision line %q, want %q", got, want)
		}
	}
	diff := mustRun(t, ns, 0, "history", pcs.Name, "--revision", "1")
	if !strings.Contains(diff, "-      - image: lockstep-examples/llm-frontend:v1") || !strings.Contains(diff, "+      - image: lockstep-examples/llm-frontend:v2") {
		t.Errorf("the diff of revision 1 does not show the frontend image change:\n%s", diff)
	}
	mustRun(t, ns, verdict.Usage, "history", pcs.Name, "--revision", "7")
}

func TestStatus_ExitCodesFromTheProgressingCondition(t *testing.T) {
	cases := []struct {
		status metav1.ConditionStatus
		reason v1alpha1.ConditionReason
		code   int
	}{
		{metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete, verdict.Complete},
		{metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded, verdict.Failed},
		{metav1.ConditionTrue, v1alpha1.ReasonPaused, verdict.Halted},
		{metav1.ConditionTrue, v1alpha1.ReasonPartitionReached, verdict.Halted},
		{metav1.ConditionTrue, v1alpha1.ReasonWaitingForDeletion, verdict.Halted},
		{metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress, verdict.TimedOut},
	}
	for _, tc := range cases {
		t.Run(string(tc.reason), func(t *testing.T) {
			ns, pcs := newPCS(t)
			setProgressing(t, pcs, tc.status, tc.reason)
			mustRun(t, ns, tc.code, "status", pcs.Name, "--watch=false")
			out := mustRun(t, ns, tc.code, "status", pcs.Name, "--timeout", "3s")
			if !strings.Contains(out, string(tc.reason)) {
				t.Errorf("status printed %q, no %s", out, tc.reason)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		ns, _ := newPCS(t)
		mustRun(t, ns, verdict.Usage, "status", "nope")
		mustRun(t, ns, verdict.Usage, "status", "federatedworkload/nope")
	})
	t.Run("superseded revision", func(t *testing.T) {
		ns, pcs := newPCS(t)
		setProgressing(t, pcs, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress)
		mustRun(t, ns, verdict.Failed, "status", pcs.Name, "--revision", pcs.Name+"-v1", "--timeout", "3s")
	})
}

// awaitCode runs a verb in the background and calls act once it has printed
// its first line.
func awaitCode(t *testing.T, ns string, act func(), args ...string) (string, int) {
	t.Helper()
	return awaitCodeOn(t, kubeconfig, ns, act, args...)
}

// awaitCodeOn is awaitCode against the cluster of the kubeconfig kc.
func awaitCodeOn(t *testing.T, kc, ns string, act func(), args ...string) (string, int) {
	t.Helper()
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	var out syncBuffer
	go func() {
		all, code := runOn(t.Context(), kc, &out, ns, args...)
		done <- result{all, code}
	}()
	eventually(t, "the first line of "+args[0], func() bool { return strings.Contains(out.String(), "\n") })
	act()
	select {
	case r := <-done:
		return r.out, r.code
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end within 30s", strings.Join(args, " "))
	}
	return "", -1
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStatus_DeletedWhileWatchingIsFailed(t *testing.T) {
	ns, pcs := newPCS(t)
	setProgressing(t, pcs, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress)
	out, code := awaitCode(t, ns, func() {
		if err := env.Client.Delete(t.Context(), pcs); err != nil {
			t.Error(err)
		}
	}, "status", pcs.Name, "--timeout", "20s")
	if code != verdict.Failed || !strings.Contains(out, "deleted") {
		t.Errorf("status of a deleted PodCliqueSet: exit %d, output %q; want 1 and 'deleted'", code, out)
	}
}

// emit records an Event about pcs as the operator's events recorder would.
func emit(t *testing.T, pcs *v1alpha1.PodCliqueSet, typ, reason, note string) {
	t.Helper()
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: pcs.Namespace, GenerateName: pcs.Name + "-"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "lockstep-podcliqueset", ReportingInstance: "test",
		Action: "Rollback", Reason: reason, Type: typ, Note: note,
		Regarding: corev1.ObjectReference{Kind: "PodCliqueSet", APIVersion: v1alpha1.GroupVersion.String(), Namespace: pcs.Namespace, Name: pcs.Name, UID: pcs.UID},
	}
	if err := env.Client.Create(t.Context(), e); err != nil {
		t.Fatal(err)
	}
}

func TestStatus_RollbackFailedEventIsFailed(t *testing.T) {
	ns, pcs := newPCS(t)
	pcs = reread(t, pcs)
	setProgressing(t, pcs, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress)
	out, code := awaitCode(t, ns, func() {
		emit(t, pcs, corev1.EventTypeWarning, "RollbackFailed", "revision 9 is not kept")
	}, "status", pcs.Name, "--timeout", "20s")
	if code != verdict.Failed || !strings.Contains(out, "revision 9 is not kept") {
		t.Errorf("status after RollbackFailed: exit %d, output %q", code, out)
	}
}

// playOperator answers the rollback annotation as the operator does: an Event,
// and the annotation removed.
func playOperator(t *testing.T, pcs *v1alpha1.PodCliqueSet, typ, reason, note string) func() {
	return func() {
		eventually(t, "the rollback annotation", func() bool {
			_, ok := reread(t, pcs).Annotations[v1alpha1.AnnotationRollbackTo]
			return ok
		})
		cur := reread(t, pcs)
		if got := cur.Annotations[v1alpha1.AnnotationRollbackTo]; got != "1" {
			t.Errorf("undo --to-revision 1 wrote %s=%q", v1alpha1.AnnotationRollbackTo, got)
		}
		delete(cur.Annotations, v1alpha1.AnnotationRollbackTo)
		if err := env.Client.Update(t.Context(), cur); err != nil {
			t.Error(err)
		}
		emit(t, cur, typ, reason, note)
	}
}

func TestUndo_ReportsTheOperatorsAnswer(t *testing.T) {
	ns, pcs := newPCS(t)
	pcs = reread(t, pcs)
	// An answer to an earlier rollback is not this one's.
	emit(t, pcs, corev1.EventTypeWarning, "RollbackFailed", "an old answer")
	out, code := awaitCode(t, ns, playOperator(t, pcs, corev1.EventTypeNormal, "RollbackStarted", "Rolling the pod templates back to revision 1 (disagg-v1)"),
		"undo", pcs.Name, "--to-revision", "1")
	if code != 0 || !strings.Contains(out, "RollbackStarted: Rolling the pod templates back to revision 1") {
		t.Errorf("undo: exit %d, output %q", code, out)
	}
	out, code = awaitCode(t, ns, playOperator(t, pcs, corev1.EventTypeWarning, "RollbackFailed", "names no kept revision"),
		"undo", pcs.Name, "--to-revision", "1")
	if code != verdict.Failed || !strings.Contains(out, "names no kept revision") {
		t.Errorf("undo refused: exit %d, output %q", code, out)
	}
	out, code = run(t.Context(), ns, "undo", pcs.Name, "--timeout", "2s")
	if code != verdict.TimedOut || !strings.Contains(out, "no answer from the operator") {
		t.Errorf("undo without an operator: exit %d, output %q", code, out)
	}
	if got := reread(t, pcs).Annotations[v1alpha1.AnnotationRollbackTo]; got != v1alpha1.RollbackToPrevious {
		t.Errorf("undo without --to-revision wrote %q", got)
	}
}

func TestGet_RendersAndPrintsTheObject(t *testing.T) {
	ns, pcs := newPCS(t)
	setProgressing(t, pcs, metav1.ConditionTrue, v1alpha1.ReasonRollingUpdateInProgress)
	c := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "disagg-0-frontend", Labels: map[string]string{
		v1alpha1.LabelPodCliqueSet: pcs.Name, v1alpha1.LabelPodCliqueSetReplicaIndex: "0", v1alpha1.LabelClique: "frontend",
	}}}
	c.Spec.Replicas = 3
	c.Spec.Template = pcs.Spec.Template.Cliques[0].Template
	if err := env.Client.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, ns, 0, "get", "pcs", pcs.Name, "--no-color")
	for _, want := range []string{"PodCliqueSet " + ns + "/disagg", "Progressing (RollingUpdateInProgress)", "└─ ✖ replica 0", "frontend", "ready 0/3"} {
		if !strings.Contains(out, want) {
			t.Errorf("get printed no %q:\n%s", want, out)
		}
	}
	var obj v1alpha1.PodCliqueSet
	if err := json.Unmarshal([]byte(mustRun(t, ns, 0, "get", "pcs", pcs.Name, "-o", "json")), &obj); err != nil || obj.Name != pcs.Name || obj.Kind != "PodCliqueSet" {
		t.Errorf("get -o json: %v, %s %s", err, obj.Kind, obj.Name)
	}
	// FederatedWorkloads live on a hub; this cluster serves none.
	out = mustRun(t, ns, verdict.Usage, "get", "federatedworkload", "x")
	if !strings.Contains(out, "they live on a fleet's hub") {
		t.Errorf("get federatedworkload on a cluster without the fleet CRDs said %q", out)
	}
	mustRun(t, ns, verdict.Usage, "get", "deployment/x")
	mustRun(t, ns, verdict.Usage, "get", "x")
	mustRun(t, ns, verdict.Usage, "get", "pcs", "nope")
	// -w ends at once on a finished rollout with --until-done.
	setProgressing(t, pcs, metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete)
	if out := mustRun(t, ns, 0, "get", "pcs", pcs.Name, "-w", "--until-done", "--timeout", "10s"); !strings.Contains(out, "Complete") {
		t.Errorf("get -w --until-done printed %q", out)
	}
}

// A status write that lands between a verb's read and its patch (the
// operator and the hub write status all through a rollout) makes the patch
// conflict; the verb reads again and makes its edit on what it read then.
func TestPatch_MakesTheEditAgainWhenTheObjectChangedUnderIt(t *testing.T) {
	ns, pcs := newPCS(t)
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	var patches, reads int
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patches++; patches == 1 {
				// the operator's status write, after the verb read the object
				setObservedGeneration(t, pcs, 1)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	s := &session{client: c, scheme: newScheme(), ns: ns, out: io.Discard}
	got, err := s.patch(t.Context(), pcs.Name, func(p *v1alpha1.PodCliqueSet) error {
		p.Spec.Paused = true
		return nil
	})
	if err != nil {
		t.Fatalf("the patch failed on a status write it did not make: %v", err)
	}
	if !got.Spec.Paused || !reread(t, pcs).Spec.Paused || patches != 2 || reads != 2 {
		t.Errorf("paused %v (served %v) after %d patches and %d reads, want it paused after 2 of each", got.Spec.Paused, reread(t, pcs).Spec.Paused, patches, reads)
	}
}

func setObservedGeneration(t *testing.T, pcs *v1alpha1.PodCliqueSet, g int64) {
	t.Helper()
	cur := reread(t, pcs)
	cur.Status.ObservedGeneration = g
	if err := env.Client.Status().Update(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
}
