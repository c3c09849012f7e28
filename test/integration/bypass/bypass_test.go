// Package bypass runs the operator against an apiserver without Lockstep's
// admission webhooks, as when the webhook is down or bypassed: objects the
// webhook would reject reach the controllers, which must report them and act
// on nothing.
package bypass

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start(testenv.Options{Webhooks: false, Setup: func(mgr ctrl.Manager) error {
		return controller.Setup(mgr, gang.None{}, nil)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// A running PodCliqueSet updated past admission into an invalid spec keeps
// every pod it had: the operator reports the spec in its conditions and a
// Warning Event, and goes on once the spec is fixed.
func TestInvalidUpdate_IsReportedAndNotActedOn(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	testenv.StartKubelet(ctx, env.Client, ns)
	pcs := readPCS(t, "../../../examples/single-node-aggregated.yaml")
	pcs.Namespace = ns
	if err := env.Client.Create(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(pcs)
	waitFor(t, "the PodCliqueSet to become available", 60*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, key, pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionAvailable))
		return c != nil && c.Status == metav1.ConditionTrue && pcs.Status.AvailableReplicas == *pcs.Spec.Replicas, fmt.Sprintf("%+v", pcs.Status)
	})
	before := podUIDs(t, ns)

	// A new image and a role step naming a role that does not exist.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, key, pcs); err != nil {
			return err
		}
		pcs.Spec.Template.Cliques[0].Template.Spec.Containers[0].Image += "-next"
		pcs.Spec.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{{Role: "encode", UpdateTo: intstr.FromInt32(1)}}}
		return env.Client.Update(ctx, pcs)
	}); err != nil {
		t.Fatalf("the apiserver without the webhook should take the update: %v", err)
	}
	waitInvalid(t, key, "spec.updateStrategy.roleUpgrade.steps[0].role")
	if after := podUIDs(t, ns); after != before {
		t.Fatalf("pods changed under an invalid spec:\n before %s\n after  %s", before, after)
	}
	assertWarning(t, ns, pcs.Name)

	// Fixed: the rollout goes on.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, key, pcs); err != nil {
			return err
		}
		pcs.Spec.UpdateStrategy.RoleUpgrade = nil
		return env.Client.Update(ctx, pcs)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rollout to complete once the spec is fixed", 90*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, key, pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
		return c != nil && c.Reason == string(v1alpha1.ReasonRolloutComplete) && pcs.Status.ObservedGeneration == pcs.Generation, fmt.Sprintf("%+v", c)
	})
}

// An invalid PodCliqueSet created past admission gets no children at all.
func TestInvalidCreate_MakesNothing(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	pcs := readPCS(t, "../../testdata/invalid/step-unknown-role.yaml")
	pcs.Namespace = ns
	if err := env.Client.Create(ctx, pcs); err != nil {
		t.Fatalf("the apiserver without the webhook should take it: %v", err)
	}
	waitInvalid(t, client.ObjectKeyFromObject(pcs), "must name a standalone clique or a scaling group")
	var cliques v1alpha1.PodCliqueList
	if err := env.Client.List(ctx, &cliques, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var groups v1alpha1.PodCliqueScalingGroupList
	if err := env.Client.List(ctx, &groups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(cliques.Items)+len(groups.Items) != 0 {
		t.Fatalf("an invalid PodCliqueSet got %d PodCliques and %d scaling groups", len(cliques.Items), len(groups.Items))
	}
}

// waitInvalid waits for Progressing False and Stalled True with reason
// InvalidSpec and a message naming want.
func waitInvalid(t *testing.T, key client.ObjectKey, want string) {
	t.Helper()
	pcs := &v1alpha1.PodCliqueSet{}
	waitFor(t, "the spec to be reported invalid", 30*time.Second, func() (bool, string) {
		if err := env.Client.Get(t.Context(), key, pcs); err != nil {
			return false, err.Error()
		}
		p := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
		s := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionStalled))
		ok := p != nil && p.Status == metav1.ConditionFalse && p.Reason == string(v1alpha1.ReasonInvalidSpec) && strings.Contains(p.Message, want) &&
			s != nil && s.Status == metav1.ConditionTrue && pcs.Status.ObservedGeneration == pcs.Generation
		return ok, fmt.Sprintf("%+v", pcs.Status.Conditions)
	})
}

func assertWarning(t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, "a Warning Event InvalidSpec", 30*time.Second, func() (bool, string) {
		var list corev1.EventList
		if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			seen = append(seen, e.Reason)
			if e.Reason == string(v1alpha1.ReasonInvalidSpec) && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == name {
				return true, ""
			}
		}
		return false, strings.Join(seen, ",")
	})
}

// podUIDs lists the namespace's pods as name=uid, sorted.
func podUIDs(t *testing.T, ns string) string {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name+"="+string(p.UID))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func readPCS(t *testing.T, path string) *v1alpha1.PodCliqueSet {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcs := &v1alpha1.PodCliqueSet{}
	if err := yaml.Unmarshal(data, pcs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pcs
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bypass-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, what, timeout, cond)
}
