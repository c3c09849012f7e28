package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// TestPodCliqueSet_NoChildContradictsRolloutComplete watches a PodCliqueSet
// from its creation through an update. At the first event of each revision
// whose status says RolloutComplete it reads every PodCliqueScalingGroup and
// PodClique from the apiserver (no cache): each must already say the same,
// every unit updated and available. A reader that looks one level down right
// after the PodCliqueSet said it is done (kubectl lockstep get, Argo CD's
// health check of a child, kstatus) must never see a child still on its way.
func TestPodCliqueSet_NoChildContradictsRolloutComplete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns := newNamespace(t)
	testenv.StartKubelet(ctx, env.Client, ns)
	events := watchSets(ctx, t, ns)
	for _, u := range manifests(t, filepath.Join(testenv.RepoRoot(), "examples", "disaggregated.yaml")) {
		u.SetNamespace(ns)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	checked := map[string]bool{} // update revisions whose completion was checked
	for len(checked) < 2 {
		var pcs *v1alpha1.PodCliqueSet
		select {
		case <-ctx.Done():
			t.Fatalf("the rollouts did not complete in time; checked %v", checked)
		case pcs = <-events:
		}
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
		if c == nil || c.Reason != string(v1alpha1.ReasonRolloutComplete) || checked[pcs.Status.UpdateRevision] {
			continue
		}
		checked[pcs.Status.UpdateRevision] = true
		if bad := childrenDisagreeing(ctx, t, ns); len(bad) > 0 {
			t.Errorf("PodCliqueSet %s says %s (%q, available %d, updated %d) while its children say otherwise:\n  %s",
				pcs.Name, c.Reason, c.Message, pcs.Status.AvailableReplicas, pcs.Status.UpdatedReplicas, strings.Join(bad, "\n  "))
		}
		if len(checked) == 1 {
			// created and complete: now roll every clique to a new image
			updatePCS(t, pcs, setEngineImage("lockstep-examples/llm-engine:v2"))
		}
	}
}

// watchSets streams the PodCliqueSets of ns, event by event, until ctx ends;
// a watch the apiserver closes is opened again where it stopped.
func watchSets(ctx context.Context, t *testing.T, ns string) <-chan *v1alpha1.PodCliqueSet {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	open := func(rv string) (watch.Interface, error) {
		return wc.Watch(ctx, &v1alpha1.PodCliqueSetList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	}
	w, err := open("")
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan *v1alpha1.PodCliqueSet)
	go func() {
		defer func() { w.Stop() }()
		rv := ""
		for {
			ev, ok := <-w.ResultChan()
			if !ok {
				if ctx.Err() != nil {
					return
				}
				if w, err = open(rv); err != nil {
					return
				}
				continue
			}
			pcs, isSet := ev.Object.(*v1alpha1.PodCliqueSet)
			if !isSet {
				continue
			}
			rv = pcs.ResourceVersion
			select {
			case out <- pcs:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// childrenDisagreeing reads every live PodCliqueScalingGroup and PodClique of
// ns from the apiserver and names those whose status is not that of a finished
// update of their spec: status for the spec's template, every unit updated and
// available, Available True. Children being deleted are on their way out and
// are left alone.
func childrenDisagreeing(ctx context.Context, t *testing.T, ns string) []string {
	t.Helper()
	var groups v1alpha1.PodCliqueScalingGroupList
	if err := env.Client.List(ctx, &groups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var cliques v1alpha1.PodCliqueList
	if err := env.Client.List(ctx, &cliques, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var bad []string
	judge := func(kind, name string, want int32, hash string, st *v1alpha1.ChildStatus) {
		var why []string
		if st.UpdateRevision != hash {
			why = append(why, fmt.Sprintf("status of revision %q, spec's is %q", st.UpdateRevision, hash))
		}
		if st.UpdatedReplicas != want {
			why = append(why, fmt.Sprintf("updated %d/%d", st.UpdatedReplicas, want))
		}
		if st.AvailableReplicas != want {
			why = append(why, fmt.Sprintf("available %d/%d", st.AvailableReplicas, want))
		}
		if c := apimeta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionAvailable)); c == nil || c.Status != "True" {
			why = append(why, "not Available")
		}
		if len(why) > 0 {
			bad = append(bad, fmt.Sprintf("%s %s: %s", kind, name, strings.Join(why, ", ")))
		}
	}
	live := 0
	for i := range groups.Items {
		g := &groups.Items[i]
		if g.DeletionTimestamp != nil {
			continue
		}
		live++
		hash, err := revision.GroupHashOf(g.Spec.Cliques)
		if err != nil {
			t.Fatal(err)
		}
		judge("PodCliqueScalingGroup", g.Name, g.Spec.Replicas, hash, &g.Status)
	}
	for i := range cliques.Items {
		c := &cliques.Items[i]
		if c.DeletionTimestamp != nil {
			continue
		}
		live++
		hash, err := revision.PodCliqueHash(c)
		if err != nil {
			t.Fatal(err)
		}
		judge("PodClique", c.Name, c.Spec.Replicas, hash, &c.Status)
	}
	// per replica: 2 scaling groups, the frontend, and 2 members in each of 2 group replicas of each group
	if want := 2 * (2 + 1 + 2*2*2); live != want {
		bad = append(bad, fmt.Sprintf("%d live children, want %d", live, want))
	}
	sort.Strings(bad)
	return bad
}
