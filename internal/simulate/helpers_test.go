package simulate

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Test builders: small PodCliqueSet specs and revisions named after the roles.

type cliqueOpt func(*v1alpha1.PodCliqueTemplateSpec)

func limits(unavailable, surge int) cliqueOpt {
	return func(c *v1alpha1.PodCliqueTemplateSpec) {
		u, s := intstr.FromInt(unavailable), intstr.FromInt(surge)
		c.UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: &u, MaxSurge: &s}
	}
}

func minAvail(n int32) cliqueOpt {
	return func(c *v1alpha1.PodCliqueTemplateSpec) { c.MinAvailable = &n }
}

func clq(name string, replicas int32, opts ...cliqueOpt) v1alpha1.PodCliqueTemplateSpec {
	c := v1alpha1.PodCliqueTemplateSpec{Name: name, Replicas: replicas}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func grp(name string, replicas, minAvailable int32, cliques ...string) v1alpha1.PodCliqueScalingGroupConfig {
	return v1alpha1.PodCliqueScalingGroupConfig{Name: name, Replicas: replicas, MinAvailable: &minAvailable, CliqueNames: cliques}
}

func withGroupLimits(g v1alpha1.PodCliqueScalingGroupConfig, unavailable, surge int) v1alpha1.PodCliqueScalingGroupConfig {
	u, s := intstr.FromInt(unavailable), intstr.FromInt(surge)
	g.UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: &u, MaxSurge: &s}
	return g
}

func pcs(replicas int32, cliques []v1alpha1.PodCliqueTemplateSpec, groups ...v1alpha1.PodCliqueScalingGroupConfig) *v1alpha1.PodCliqueSetSpec {
	obj := v1alpha1.PodCliqueSet{Spec: v1alpha1.PodCliqueSetSpec{Replicas: &replicas,
		Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques, PodCliqueScalingGroups: groups}}}
	obj.Default()
	return &obj.Spec
}

// withStrategy sets the update strategy and defaults again.
func withStrategy(spec *v1alpha1.PodCliqueSetSpec, st v1alpha1.PodCliqueSetUpdateStrategy) *v1alpha1.PodCliqueSetSpec {
	obj := v1alpha1.PodCliqueSet{Spec: *spec.DeepCopy()}
	obj.Spec.UpdateStrategy = st
	obj.Default()
	return &obj.Spec
}

func recreate(unavailable, surge int) v1alpha1.PodCliqueSetUpdateStrategy {
	u, s := intstr.FromInt(unavailable), intstr.FromInt(surge)
	return v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.ReplicaRecreateStrategyType,
		RollingUpdate: &v1alpha1.PodCliqueSetRollingUpdate{MaxUnavailable: &u, MaxSurge: &s}}
}

// revision names every role of spec: role "x" at revision "v1" is "x@v1". Roles
// listed in keep carry their revision over from prev.
func revision(name string, spec *v1alpha1.PodCliqueSetSpec, prev *rollout.SetRevision, keep ...string) rollout.SetRevision {
	rev := rollout.SetRevision{Name: name}
	add := func(role string) {
		r := role + "@" + name
		if prev != nil && slices.Contains(keep, role) {
			r, _ = prev.Role(role)
		}
		rev.Roles = append(rev.Roles, rollout.RoleRevision{Role: role, Revision: r})
	}
	for _, c := range spec.Template.Cliques {
		add(c.Name)
	}
	for _, g := range spec.Template.PodCliqueScalingGroups {
		add(g.Name)
		// a group's template covers its members: a changed member changes the group
		for _, m := range g.CliqueNames {
			if prev == nil {
				break
			}
			was, _ := prev.Role(m)
			if now, _ := rev.Role(m); now != was {
				rev.Roles[len(rev.Roles)-1].Revision = g.Name + "@" + name
			}
		}
	}
	return rev
}

// update is a scenario that moves spec from v1 to v2 (every role changed).
func update(from, to *v1alpha1.PodCliqueSetSpec) Scenario {
	v1 := revision("v1", from, nil)
	return Scenario{From: from, FromRevision: v1, To: to, ToRevision: revision("v2", to, &v1), Startup: 10 * time.Second}
}

// lines renders the actions that match keep, "t=10s " first.
func lines(res Result, keep func(a Action) bool) []string {
	var out []string
	for _, a := range res.Timeline {
		if keep(a) {
			out = append(out, fmt.Sprintf("t=%s %s", a.At, a))
		}
	}
	return out
}

func all(Action) bool { return true }

// notMemberPods hides the pods created inside group replicas: they follow from
// the group replica's creation.
func notMemberPods(a Action) bool { return a.Group == "" }

func setLevel(a Action) bool { return a.Level == LevelPodCliqueSet }

func assertLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func assertOutcome(t *testing.T, res Result, kind OutcomeKind) {
	t.Helper()
	if res.Outcome.Kind != kind {
		t.Fatalf("outcome %s (%s), want %s\n%s", res.Outcome.Kind, res.Outcome.Reason, kind, strings.Join(lines(res, all), "\n"))
	}
}

func minAvailableOf(res Result, role string) int32 {
	for _, f := range res.Summary.MinAvailable {
		if f.Role == role {
			return f.Value
		}
	}
	return -1
}
