package podcliqueset

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// For every example rolled to a new image, at every plan of the simulated
// rollout, the child spec the controller writes for a target is the one
// rollout.PlanTree planned with, and the policy the child's controller decodes
// from the written object (its template's hash, the template of the revision it
// names for held-back units) is the policy PlanTree used: `lockstep plan` runs
// the operator's encoding, not a copy of it.
func TestChildSpecs_TheControllerWritesWhatPlanTreePlannedWith(t *testing.T) {
	files, err := filepath.Glob("../../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			from := readExample(t, f)
			to := from.DeepCopy()
			for i := range to.Spec.Template.Cliques {
				c := &to.Spec.Template.Cliques[i].Template.Spec.Containers[0]
				c.Image = strings.Replace(c.Image, ":v1", ":v2", 1) + "-next"
			}
			var revs [2]rollout.SetRevision
			for i, pcs := range []*v1alpha1.PodCliqueSet{from, to} {
				if revs[i], err = revision.ForSpec(pcs.Name, &pcs.Spec); err != nil {
					t.Fatal(err)
				}
			}
			fromRev, toRev := revs[0], revs[1]
			tmpls := templates{fromRev.Name: &from.Spec.Template, toRev.Name: &to.Spec.Template}
			compared := 0
			res := simulate.Run(simulate.Scenario{
				From: &from.Spec, FromRevision: fromRev, To: &to.Spec, ToRevision: toRev, Startup: 10 * time.Second,
				OnPlan: func(in rollout.SetInput, tree rollout.TreePlan) {
					compared += compareChildren(t, to, tmpls, in, tree)
				},
			})
			onDeleteWaits := to.Spec.UpdateStrategy.Type == v1alpha1.OnDeleteStrategyType && res.Outcome.Kind == simulate.Stuck
			if res.Outcome.Kind != simulate.Complete && !onDeleteWaits {
				t.Fatalf("the simulated rollout did not complete: %+v", res.Outcome)
			}
			if compared == 0 {
				t.Fatal("no child spec compared")
			}
		})
	}
}

// compareChildren checks every child PlanTree planned against the controller's
// encoding and returns how many it compared.
func compareChildren(t *testing.T, pcs *v1alpha1.PodCliqueSet, tmpls templates, in rollout.SetInput, tree rollout.TreePlan) int {
	t.Helper()
	n := 0
	for _, cp := range tree.Children {
		if cp.Kind == rollout.KindMember {
			continue
		}
		target, obs := childTarget(tree.Set, in, cp)
		e := childEncoder{pcs: pcs, spec: in.Spec, revs: in.Revisions, tmpls: tmpls, replica: cp.Replica}
		var written rollout.ChildSpec
		var updateHash, currentHash string
		switch cp.Kind {
		case rollout.KindClique:
			var existing *v1alpha1.PodClique
			if obs != nil {
				existing = &v1alpha1.PodClique{ObjectMeta: withTemplateReplicas(obs.Template), Spec: v1alpha1.PodCliqueSpec{Replicas: obs.Spec}}
			}
			pclq, err := e.clique(cp.Role, target, existing)
			if err != nil {
				t.Fatal(err)
			}
			written = childSpecOf(pclq.Spec.Replicas, pclq.Spec.Revision, pclq.Spec.UpdateStrategy)
			updateHash = mustHash(revision.PodCliqueHash(pclq))
			currentHash = updateHash
			if cur := pclq.Spec.UpdateStrategy.CurrentRevision; cur != "" {
				currentHash = mustHash(revision.CliqueHash(tmpls[cur].Clique(cp.Role)))
			}
		case rollout.KindGroup:
			var existing *v1alpha1.PodCliqueScalingGroup
			if obs != nil {
				existing = &v1alpha1.PodCliqueScalingGroup{ObjectMeta: withTemplateReplicas(obs.Template), Spec: v1alpha1.PodCliqueScalingGroupSpec{Replicas: obs.Spec}}
			}
			g, err := e.group(cp.Role, target, existing)
			if err != nil {
				t.Fatal(err)
			}
			written = childSpecOf(g.Spec.Replicas, g.Spec.Revision, g.Spec.UpdateStrategy)
			updateHash = mustHash(revision.GroupHashOf(g.Spec.Cliques))
			currentHash = updateHash
			if cur := g.Spec.UpdateStrategy.CurrentRevision; cur != "" {
				for _, set := range []rollout.SetRevision{in.Revisions.Current, in.Revisions.Update} {
					if h, ok := set.Role(cp.Role); ok && set.Name == cur {
						currentHash = h
					}
				}
			}
		}
		if !equality.Semantic.DeepEqual(written, *cp.Spec) {
			t.Fatalf("replica %d %s %s: the controller writes\n%+v\nPlanTree planned with\n%+v", cp.Replica, cp.Kind, cp.Role, written, *cp.Spec)
		}
		if got := written.Policy(cp.Kind, updateHash, currentHash); !equality.Semantic.DeepEqual(got, cp.Policy) {
			t.Fatalf("replica %d %s %s: the child decodes policy\n%+v\nPlanTree planned with\n%+v", cp.Replica, cp.Kind, cp.Role, got, cp.Policy)
		}
		n++
	}
	return n
}

// childTarget finds the target the set plan gave a child, and the child as
// observed (nil when it does not exist yet).
func childTarget(set rollout.SetPlan, in rollout.SetInput, cp rollout.ChildPlan) (rollout.Target, *rollout.ChildReplicasObservation) {
	var target rollout.Target
	for _, rp := range set.Replicas {
		if rp.Index != cp.Replica {
			continue
		}
		for _, ct := range append(append([]rollout.ChildTarget{}, rp.Cliques...), rp.Groups...) {
			if ct.Role == cp.Role && ct.Target != nil {
				target = *ct.Target
			}
		}
	}
	for _, r := range in.Replicas {
		if r.Index != cp.Replica || r.Terminating {
			continue
		}
		for _, c := range r.Cliques {
			if c.Name == cp.Role {
				return target, &rollout.ChildReplicasObservation{Spec: c.SpecReplicas, Template: c.TemplateReplicas}
			}
		}
		for _, g := range r.Groups {
			if g.Name == cp.Role {
				return target, &rollout.ChildReplicasObservation{Spec: g.SpecReplicas, Template: g.TemplateReplicas}
			}
		}
	}
	return target, nil
}

func childSpecOf(replicas int32, rev string, st v1alpha1.ChildUpdateStrategy) rollout.ChildSpec {
	return rollout.ChildSpec{Replicas: replicas, Revision: rev, UpdateStrategy: st}
}

func withTemplateReplicas(n int32) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: map[string]string{annotationTemplateReplicas: strconv.Itoa(int(n))}}
}

func mustHash(h string, err error) string {
	if err != nil {
		panic(err)
	}
	return h
}

func readExample(t *testing.T, path string) *v1alpha1.PodCliqueSet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcs := &v1alpha1.PodCliqueSet{}
	if err := yaml.Unmarshal(b, pcs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	pcs.Default()
	return pcs
}
