package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/utils/ptr"

	"go.uber.org/zap/zapcore"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/controller"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// These tests run admission end to end: a real kube-apiserver with the generated
// CRDs (OpenAPI and CEL rules) calling this package's webhooks over TLS.

var env *testenv.Env

func TestMain(m *testing.M) {
	// Controller errors go to the test log; set LOCKSTEP_TEST_LOG=debug for everything.
	level := zapcore.ErrorLevel
	if os.Getenv("LOCKSTEP_TEST_LOG") == "debug" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	// A real Prometheus scraping the test's exporter answers gates' analyses.
	target := httptest.NewServer(&exporter)
	var err error
	if prom, err = testenv.StartPrometheus(strings.TrimPrefix(target.URL, "http://")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		target.Close()
		os.Exit(1)
	}
	env, err = testenv.Start(testenv.Options{Webhooks: true, PodGroupProtection: true, Setup: func(mgr ctrl.Manager) error {
		// envtest serves the gang API (no scheduler: the test kubelet binds pods).
		return controller.Setup(mgr, gang.NewNative(gang.Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), IndexedPods: true}),
			&analysis.Measurer{PrometheusAddresses: []string{prom.Address}})
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = prom.Stop()
		target.Close()
		os.Exit(1)
	}
	code := m.Run()
	// No reader changed a pod of the cache it listed read-only.
	if changed, err := changedCachedPods(context.Background()); err != nil || len(changed) > 0 {
		fmt.Fprintf(os.Stderr, "pods of the operator's cache changed by a reader (not as the apiserver serves them): %v (error %v)\n", changed, err)
		code = 1
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	_ = prom.Stop()
	target.Close()
	os.Exit(code)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "admission-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// manifests decodes the YAML documents of a file into unstructured objects, as
// kubectl would send them (unknown fields and all).
func manifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		objs = append(objs, u)
	}
	return objs
}

// expectations are the "# expect: ..." lines of a corpus file.
func expectations(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if e, ok := strings.CutPrefix(line, "# expect: "); ok {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no '# expect:' line", path)
	}
	return out
}

// warningRecorder collects the admission warnings the apiserver relays.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, text)
}

func clientWithWarnings(t *testing.T) (client.Client, *warningRecorder) {
	t.Helper()
	rec := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = rec
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func TestAdmission_AcceptsEveryExample(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "examples", "*.yaml"))
	if err != nil || len(paths) < 6 {
		t.Fatalf("expected at least 6 examples, found %d (%v)", len(paths), err)
	}
	ns := newNamespace(t)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, u := range manifests(t, path) {
				u.SetNamespace(ns)
				if err := env.Client.Create(context.Background(), u); err != nil {
					t.Fatalf("example rejected: %v", err)
				}
				if u.GetKind() != "PodCliqueSet" {
					continue
				}
				var pcs v1alpha1.PodCliqueSet
				if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), &pcs); err != nil {
					t.Fatal(err)
				}
				assertDefaulted(t, &pcs)
			}
		})
	}
}

// assertDefaulted checks that the stored object carries the webhook's defaults.
func assertDefaulted(t *testing.T, pcs *v1alpha1.PodCliqueSet) {
	t.Helper()
	s := pcs.Spec
	if s.Replicas == nil || s.ProgressDeadlineSeconds == nil || s.RevisionHistoryLimit == nil {
		t.Errorf("top-level defaults missing: %+v", s)
	}
	if s.UpdateStrategy.Type == "" || s.UpdateStrategy.Type == v1alpha1.RollingRecreateStrategyType {
		t.Errorf("updateStrategy.type = %q, want a normalized type", s.UpdateStrategy.Type)
	}
	for _, c := range s.Template.Cliques {
		if c.Replicas > 0 && c.MinAvailable == nil {
			t.Errorf("clique %s: minAvailable not defaulted", c.Name)
		}
	}
	if s.UpdateStrategy.Type == v1alpha1.ReplicaRecreateStrategyType {
		ru := s.UpdateStrategy.RollingUpdate
		if ru == nil || ru.MaxUnavailable == nil || ru.MaxSurge == nil {
			t.Errorf("ReplicaRecreate limits not defaulted: %+v", ru)
		}
	}
}

func TestAdmission_RejectsInvalidCorpus(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "test", "testdata", "invalid", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	ns := newNamespace(t)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			ctx := context.Background()
			objs := manifests(t, path)
			// Every document but the last sets the scene (create, then update) and
			// must be accepted; the last one must be rejected.
			var before *unstructured.Unstructured
			for _, u := range objs[:len(objs)-1] {
				u.SetNamespace(ns)
				if err := env.Client.Create(ctx, u); err != nil {
					t.Fatalf("setup document rejected: %v", err)
				}
				before = u.DeepCopy()
			}
			last := objs[len(objs)-1]
			last.SetNamespace(ns)
			if before != nil {
				last.SetResourceVersion(before.GetResourceVersion())
				err = env.Client.Update(ctx, last)
			} else {
				err = env.Client.Create(ctx, last)
			}
			if err == nil {
				t.Fatalf("accepted, want rejection with %q", expectations(t, path))
			}
			t.Logf("rejected as expected: %v", err)
			for _, want := range expectations(t, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
			if before != nil {
				assertUntouched(t, before)
			}
		})
	}
}

// assertUntouched checks that a rejected update left the stored object as it was.
func assertUntouched(t *testing.T, before *unstructured.Unstructured) {
	t.Helper()
	var stored, orig v1alpha1.PodCliqueSet
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(before), &stored); err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(before.Object, &orig); err != nil {
		t.Fatal(err)
	}
	if stored.Generation != orig.Generation || !apiequality.Semantic.DeepEqual(stored.Spec, orig.Spec) {
		t.Errorf("rejected update changed the stored object: generation %d -> %d", orig.Generation, stored.Generation)
	}
}

func minimalPCS(ns, name string) *v1alpha1.PodCliqueSet {
	return &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodCliqueSetSpec{
			Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{{
				Name: "worker", Replicas: 2,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:v1"}}}},
			}}},
		},
	}
}

func TestAdmission_RollingRecreateIsStoredAsRollingUpdate(t *testing.T) {
	pcs := minimalPCS(newNamespace(t), "synonym")
	pcs.Spec.UpdateStrategy.Type = v1alpha1.RollingRecreateStrategyType
	if err := env.Client.Create(context.Background(), pcs); err != nil {
		t.Fatal(err)
	}
	if pcs.Spec.UpdateStrategy.Type != v1alpha1.RollingUpdateStrategyType {
		t.Fatalf("type = %q, want RollingUpdate", pcs.Spec.UpdateStrategy.Type)
	}
}

func TestAdmission_ReportsEveryWebhookErrorAtOnce(t *testing.T) {
	pcs := minimalPCS(newNamespace(t), "many-errors")
	// Three independent mistakes only the webhook can see.
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, v1alpha1.PodCliqueTemplateSpec{
		Name: "leader", Replicas: 1,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}},
	})
	pcs.Spec.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
		{Role: "encode", UpdateTo: intOrStr(1)},
		{Role: "worker", UpdateTo: intOrStr(5)},
	}}
	err := env.Client.Create(context.Background(), pcs)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"spec.template.cliques[1].template.spec.containers[0].image",
		"spec.updateStrategy.roleUpgrade.steps[0].role",
		"spec.updateStrategy.roleUpgrade.steps[1].updateTo",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error misses %s:\n%v", want, err)
		}
	}
}

func TestAdmission_WarnsAboutSurgeThatNeedsWholeGangs(t *testing.T) {
	c, rec := clientWithWarnings(t)
	ns := newNamespace(t)
	for _, u := range manifests(t, filepath.Join(testenv.RepoRoot(), "examples", "multinode-aggregated.yaml")) {
		u.SetNamespace(ns)
		if err := c.Create(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range rec.messages {
		if strings.Contains(m, `scaling group "decode"`) && strings.Contains(m, "gang of its own") {
			return
		}
	}
	t.Fatalf("no surge warning for scaling group decode; warnings: %q", rec.messages)
}

func TestAdmission_ChildKinds(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:v1"}}}}
	pclq := &v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pclq"},
		Spec:       v1alpha1.PodCliqueSpec{Replicas: 2, MinAvailable: ptr.To(int32(2)), Template: tmpl},
	}
	if err := env.Client.Create(ctx, pclq); err != nil {
		t.Fatalf("valid PodClique rejected: %v", err)
	}
	// A user scaling the clique below its gang minimum gets a clear answer.
	pclq.Spec.Replicas = 1
	if err := env.Client.Update(ctx, pclq); err == nil || !strings.Contains(err.Error(), "minAvailable must not exceed replicas") {
		t.Fatalf("scaling below minAvailable: got %v", err)
	}

	pcsg := &v1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pcsg"},
		Spec: v1alpha1.PodCliqueScalingGroupSpec{Replicas: 2, Cliques: []v1alpha1.PodCliqueTemplateSpec{
			{Name: "leader", Replicas: 1, Template: tmpl}, {Name: "worker", Replicas: 2, Template: tmpl},
		}},
	}
	if err := env.Client.Create(ctx, pcsg); err != nil {
		t.Fatalf("valid PodCliqueScalingGroup rejected: %v", err)
	}
	pcsg.Spec.Cliques = pcsg.Spec.Cliques[:1]
	if err := env.Client.Update(ctx, pcsg); err == nil || !strings.Contains(err.Error(), "create a new PodCliqueSet") {
		t.Fatalf("changing a group's cliques: got %v", err)
	}
}

func TestAdmission_ScaleSubresourceScalesWithoutRevisionChange(t *testing.T) {
	ctx := context.Background()
	pcs := minimalPCS(newNamespace(t), "scaled")
	if err := env.Client.Create(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	gen := pcs.Generation
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, pcs, scale); err != nil {
		t.Fatalf("reading /scale: %v", err)
	}
	scale.Spec.Replicas = 5
	if err := env.Client.SubResource("scale").Update(ctx, pcs, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("writing /scale: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs); err != nil {
		t.Fatal(err)
	}
	if *pcs.Spec.Replicas != 5 || pcs.Generation != gen+1 {
		t.Fatalf("after /scale: replicas=%d generation=%d (was %d)", *pcs.Spec.Replicas, pcs.Generation, gen)
	}
}

func intOrStr(i int) intstr.IntOrString { return intstr.FromInt(i) }

// The pod templates' metadata must survive the CRD schema (embedded ObjectMeta is
// pruned unless the schema describes it).
func TestAdmission_KeepsPodTemplateMetadata(t *testing.T) {
	ctx := context.Background()
	pcs := minimalPCS(newNamespace(t), "keeps-metadata")
	pcs.Spec.Template.Cliques[0].Template.Labels = map[string]string{"app": "worker"}
	pcs.Spec.Template.Cliques[0].Template.Annotations = map[string]string{"example.com/note": "kept"}
	if err := env.Client.Create(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.PodCliqueSet
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), &got); err != nil {
		t.Fatal(err)
	}
	meta := got.Spec.Template.Cliques[0].Template.ObjectMeta
	if meta.Labels["app"] != "worker" || meta.Annotations["example.com/note"] != "kept" {
		t.Fatalf("pod template metadata lost: %+v", meta)
	}
}
