package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/limit"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// Strategy is one budget, given to a Deployment and to a Lockstep clique alike,
// and where Lockstep starts its surge pods.
type Strategy struct {
	Name                     string
	MaxSurge, MaxUnavailable intstr.IntOrString
	// SurgePlacement is the PodCliqueSet's ("" leaves the default, AboveReplicas).
	SurgePlacement v1alpha1.SurgePlacement
}

// Strategies are the budgets `make bench-rollout` compares; those with a surge
// run Lockstep with each surge placement.
var Strategies = []Strategy{
	{Name: "maxSurge 1, maxUnavailable 0", MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0)},
	{Name: "maxSurge 1, maxUnavailable 0, surge at the replaced index", MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0),
		SurgePlacement: v1alpha1.ReplacedIndex},
	{Name: "maxSurge 0, maxUnavailable 1", MaxSurge: intstr.FromInt32(0), MaxUnavailable: intstr.FromInt32(1)},
	{Name: "25% / 25%", MaxSurge: intstr.FromString("25%"), MaxUnavailable: intstr.FromString("25%")},
	{Name: "25% / 25%, surge at the replaced index", MaxSurge: intstr.FromString("25%"), MaxUnavailable: intstr.FromString("25%"),
		SurgePlacement: v1alpha1.ReplacedIndex},
}

// Budget names the limits alone: strategies with one budget share one
// Deployment rollout.
func (s Strategy) Budget() string {
	return s.MaxSurge.String() + "/" + s.MaxUnavailable.String()
}

// Waves is the fewest waves a rollout of pods can take under s: it replaces at
// most maxSurge + maxUnavailable pods at a time.
func (s Strategy) Waves(pods int) int {
	surge, _ := limit.Resolve(s.MaxSurge, int32(pods), limit.Up)
	unavailable, _ := limit.Resolve(s.MaxUnavailable, int32(pods), limit.Down)
	step := int(max(surge+unavailable, 1))
	return int(math.Ceil(float64(pods) / float64(step)))
}

// Result is one measured rollout.
type Result struct {
	Controller string
	Strategy   Strategy
	Pods       int
	// Took is from the template change until the controller reports every pod
	// updated and available; Ideal is Waves × the pods' ready delay.
	Took, Ideal time.Duration
	// Started is when the template changed.
	Started time.Time
	Writes  Writes
}

// Runner rolls workloads in one namespace of a cluster whose pods become ready
// ReadyDelay after they are bound.
type Runner struct {
	Client     client.Client
	Config     *rest.Config
	Namespace  string
	Pods       int
	ReadyDelay time.Duration
	// Replacement is the PodCliqueSets' podReplacementPolicy ("" leaves the default).
	Replacement v1alpha1.PodReplacementPolicy
	// PodAnnotations go on every pod (kwok's per-pod stage delays, say).
	PodAnnotations map[string]string
	// Poll is how often completion is checked; it bounds the timing's resolution.
	Poll    time.Duration
	Timeout time.Duration
}

const benchImage = "lockstep-examples/bench-server"

func (r *Runner) podTemplate(tag string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}, Annotations: maps.Clone(r.PodAnnotations)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: benchImage + ":" + tag}}},
	}
}

// Deployment rolls a Deployment of r.Pods from v1 to v2 under s.
func (r *Runner) Deployment(ctx context.Context, name string, s Strategy) (Result, error) {
	d := NewDeployment(r.Namespace, name, r.Pods, s, r.podTemplate("v1"))
	if err := r.Client.Create(ctx, d); err != nil {
		return Result{}, fmt.Errorf("creating Deployment %s: %w", name, err)
	}
	done := func(ctx context.Context) (bool, error) {
		var cur appsv1.Deployment
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), &cur); err != nil {
			return false, err
		}
		return DeploymentRolledOut(&cur, r.Pods), nil
	}
	roll := func(ctx context.Context) error {
		// the controller writes status meanwhile: read again on a conflict
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur appsv1.Deployment
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), &cur); err != nil {
				return err
			}
			RetagPod(&cur.Spec.Template.Spec, "v2")
			return r.Client.Update(ctx, &cur)
		})
	}
	res, err := r.measure(ctx, "Deployment", s, done, roll)
	if derr := r.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); derr != nil && err == nil {
		err = derr
	}
	return res, err
}

// Lockstep rolls a PodCliqueSet of one standalone clique of r.Pods from v1 to
// v2 under s.
func (r *Runner) Lockstep(ctx context.Context, name string, s Strategy) (Result, error) {
	pcs := NewPodCliqueSet(r.Namespace, name, r.Pods, s, r.Replacement, r.podTemplate("v1"))
	if err := r.Client.Create(ctx, pcs); err != nil {
		return Result{}, fmt.Errorf("creating PodCliqueSet %s: %w", name, err)
	}
	var from string
	done := func(ctx context.Context) (bool, error) {
		var cur v1alpha1.PodCliqueSet
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(pcs), &cur); err != nil {
			return false, err
		}
		var pclq v1alpha1.PodClique
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: naming.PodClique(name, 0, Clique)}, &pclq); err != nil {
			return false, err
		}
		return PodCliqueSetRolledOut(&cur, &pclq, r.Pods, from), nil
	}
	roll := func(ctx context.Context) error {
		// the controller writes status meanwhile: read again on a conflict
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur v1alpha1.PodCliqueSet
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(pcs), &cur); err != nil {
				return err
			}
			from = cur.Status.UpdateRevision
			RetagImages(&cur.Spec, "v2")
			return r.Client.Update(ctx, &cur)
		})
	}
	res, err := r.measure(ctx, "Lockstep", s, done, roll)
	if derr := r.Client.Delete(ctx, pcs, client.PropagationPolicy(metav1.DeletePropagationForeground)); derr != nil && err == nil {
		err = derr
	}
	return res, err
}

// measure waits for the workload to settle on v1, rolls it and times the
// rollout until done, counting the apiserver's writes over that window, then
// waits for every pod of the namespace to go.
func (r *Runner) measure(ctx context.Context, controller string, s Strategy, done func(context.Context) (bool, error),
	roll func(context.Context) error) (Result, error) {
	res := Result{Controller: controller, Strategy: s, Pods: r.Pods, Ideal: time.Duration(s.Waves(r.Pods)) * r.ReadyDelay}
	if err := r.poll(ctx, done); err != nil {
		return res, fmt.Errorf("%s: waiting for v1: %w", controller, err)
	}
	before, err := ScrapeWrites(ctx, r.Config)
	if err != nil {
		return res, err
	}
	start := time.Now()
	res.Started = start
	if err := roll(ctx); err != nil {
		return res, fmt.Errorf("%s: changing the template: %w", controller, err)
	}
	if err := r.poll(ctx, done); err != nil {
		return res, fmt.Errorf("%s: waiting for v2: %w", controller, err)
	}
	res.Took = time.Since(start)
	after, err := ScrapeWrites(ctx, r.Config)
	if err != nil {
		return res, err
	}
	// both controllers' counts include the harness's one template change
	res.Writes = after.Minus(before)
	return res, nil
}

func (r *Runner) poll(ctx context.Context, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, r.Poll, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // transient read errors are retried until the timeout
		}
		return ok, nil
	})
}

// AwaitNoPods waits until the namespace has no pods left.
func (r *Runner) AwaitNoPods(ctx context.Context) error {
	return r.poll(ctx, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
}

// SetResult is one measured rollout of a whole PodCliqueSet.
type SetResult struct {
	Name string
	Pods int
	// Took is from the template change until the PodCliqueSet reports the
	// update revision current with every replica updated and available; Ideal
	// is what Lockstep's own planner takes with no control plane in the way
	// (the offline simulator, pods ready ReadyDelay after creation).
	Took, Ideal time.Duration
	// Started is when the template changed.
	Started time.Time
	Writes  Writes
}

// Set rolls pcs (created here, in r.Namespace, with r.PodAnnotations on every
// clique's pods) from its template to one with every container's image tagged
// v2; ideal is the simulated time of the same change.
func (r *Runner) Set(ctx context.Context, pcs *v1alpha1.PodCliqueSet, ideal time.Duration) (SetResult, error) {
	pcs = pcs.DeepCopy()
	pcs.Namespace = r.Namespace
	pods := 0
	for i := range pcs.Spec.Template.Cliques {
		c := &pcs.Spec.Template.Cliques[i]
		if c.Template.Annotations == nil {
			c.Template.Annotations = map[string]string{}
		}
		maps.Copy(c.Template.Annotations, r.PodAnnotations)
		n := int(c.Replicas)
		if g := pcs.Spec.Template.ScalingGroupOf(c.Name); g != nil {
			n *= int(g.Replicas)
		}
		pods += n * int(ptr.Deref(pcs.Spec.Replicas, 1))
	}
	res := SetResult{Name: pcs.Name, Pods: pods, Ideal: ideal}
	if err := r.Client.Create(ctx, pcs); err != nil {
		return res, fmt.Errorf("creating PodCliqueSet %s: %w", pcs.Name, err)
	}
	var from string
	done := func(ctx context.Context) (bool, error) {
		var cur v1alpha1.PodCliqueSet
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(pcs), &cur); err != nil {
			return false, err
		}
		st, n := cur.Status, ptr.Deref(cur.Spec.Replicas, 1)
		return st.ObservedGeneration >= cur.Generation && st.UpdateRevision != from && st.CurrentRevision == st.UpdateRevision &&
			st.UpdatedReplicas == n && st.AvailableReplicas == n && st.Replicas == n, nil
	}
	roll := func(ctx context.Context) error {
		// the controller writes status meanwhile: read again on a conflict
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur v1alpha1.PodCliqueSet
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(pcs), &cur); err != nil {
				return err
			}
			from = cur.Status.UpdateRevision
			RetagImages(&cur.Spec, "v2")
			return r.Client.Update(ctx, &cur)
		})
	}
	m, err := r.measure(ctx, "Lockstep", Strategy{Name: pcs.Name}, done, roll)
	res.Took, res.Writes = m.Took, m.Writes
	if derr := r.Client.Delete(ctx, pcs, client.PropagationPolicy(metav1.DeletePropagationForeground)); derr != nil && err == nil {
		err = derr
	}
	return res, err
}

// RetagImages gives every container of every clique the image tag tag.
func RetagImages(spec *v1alpha1.PodCliqueSetSpec, tag string) {
	for i := range spec.Template.Cliques {
		RetagPod(&spec.Template.Cliques[i].Template.Spec, tag)
	}
}

// RetagPod gives every container of a pod spec the image tag tag.
func RetagPod(spec *corev1.PodSpec, tag string) {
	for j := range spec.Containers {
		image := spec.Containers[j].Image
		if k := strings.LastIndex(image, ":"); k > strings.LastIndex(image, "/") {
			image = image[:k]
		}
		spec.Containers[j].Image = image + ":" + tag
	}
}

// NewDeployment is a Deployment of pods replicas of tmpl, rolled under s. Its
// selector is the label bench=name, added to the template's labels.
func NewDeployment(ns, name string, pods int, s Strategy, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	tmpl = *tmpl.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["bench"] = name
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(pods)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(tmpl.Labels)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s.MaxSurge, MaxUnavailable: &s.MaxUnavailable}},
			Template: tmpl,
		},
	}
}

// NewPodCliqueSet is a PodCliqueSet of one replica of one standalone clique,
// "server", of pods replicas of tmpl, rolled under s with the given
// podReplacementPolicy ("" leaves the default).
func NewPodCliqueSet(ns, name string, pods int, s Strategy, replacement v1alpha1.PodReplacementPolicy, tmpl corev1.PodTemplateSpec) *v1alpha1.PodCliqueSet {
	return &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodCliqueSetSpec{
			Replicas:             ptr.To[int32](1),
			PodReplacementPolicy: replacement,
			SurgePlacement:       s.SurgePlacement,
			Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{{
				Name: Clique, Replicas: int32(pods), MinAvailable: ptr.To[int32](1),
				UpdateStrategy: &v1alpha1.ComponentUpdateStrategy{MaxSurge: &s.MaxSurge, MaxUnavailable: &s.MaxUnavailable},
				Template:       *tmpl.DeepCopy(),
			}}},
		},
	}
}

// Clique is the one clique of a PodCliqueSet made by NewPodCliqueSet.
const Clique = "server"

// DeploymentRolledOut is the Deployment controller's own notion of a finished
// rollout: its status has seen the latest spec and counts every one of pods
// updated and available.
func DeploymentRolledOut(d *appsv1.Deployment, pods int) bool {
	st, n := d.Status, int32(pods)
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == n && st.AvailableReplicas == n && st.Replicas == n
}

// PodCliqueSetRolledOut is Lockstep's own notion of a finished rollout of a
// PodCliqueSet made by NewPodCliqueSet (its update revision, no longer from,
// current), with every one of pods of its clique, pclq, updated and available,
// as a Deployment's counts say of its pods. from is the update revision before
// the template changed ("" for a new PodCliqueSet).
func PodCliqueSetRolledOut(pcs *v1alpha1.PodCliqueSet, pclq *v1alpha1.PodClique, pods int, from string) bool {
	st, n := pcs.Status, int32(pods)
	return st.ObservedGeneration >= pcs.Generation && st.UpdateRevision != "" && st.UpdateRevision != from && st.CurrentRevision == st.UpdateRevision &&
		pclq.Status.UpdatedReplicas == n && pclq.Status.AvailableReplicas == n && pclq.Status.Replicas == n
}
