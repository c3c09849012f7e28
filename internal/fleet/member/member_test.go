package member

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
)

func mustParse(t *testing.T, raw string) *Template {
	t.Helper()
	tmpl, err := ParseTemplate([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

const (
	deployV1 = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"}},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"web:1"}]}}}}`
	deployV2 = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"}},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"web:2"}]}}}}`
	stsV1    = `{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"serviceName":"db","selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"db:1"}]}}}}`
	pcsV1    = `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{"updateStrategy":{"type":"RollingUpdate"},"template":{"cliques":[{"name":"a","template":{"spec":{"containers":[{"name":"c","image":"a:1"}]}}}]}}}`
	// pcsRecreate carries limits of its own, as a template stored before
	// admission refused them would.
	pcsRecreate = `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{"updateStrategy":{"type":"ReplicaRecreate","rollingUpdate":{"maxUnavailable":"50%","maxSurge":3}},"template":{"cliques":[{"name":"a","template":{"spec":{"containers":[{"name":"c","image":"a:1"}]}}}]}}}`
	pcsDefault  = `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{"template":{"cliques":[{"name":"a","template":{"spec":{"containers":[{"name":"c","image":"a:1"}]}}}]}}}`
)

func TestParseTemplate_KindsAndRevisions(t *testing.T) {
	cases := []struct {
		name, raw string
		kind      Kind
		wantErr   bool
	}{
		{"deployment", deployV1, Deployment, false},
		{"statefulset", stsV1, StatefulSet, false},
		{"podcliqueset", pcsV1, PodCliqueSet, false},
		{"daemonset", `{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{}}`, "", true},
		{"deployment of another group", `{"apiVersion":"extensions/v1beta1","kind":"Deployment","spec":{}}`, "", true},
		{"not an object", `[1]`, "", true},
		{"empty", ``, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := ParseTemplate([]byte(c.raw))
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %v", err, c.wantErr)
			}
			if err == nil && tmpl.Kind != c.kind {
				t.Errorf("kind %s, want %s", tmpl.Kind, c.kind)
			}
		})
	}
	if mustParse(t, deployV1).Revision == mustParse(t, deployV2).Revision {
		t.Error("a new image did not change the revision")
	}
	withLabel := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web","tier":"x"}},"spec":{"minReadySeconds":5,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"web:1"}]}}}}`
	if mustParse(t, deployV1).Revision != mustParse(t, withLabel).Revision {
		t.Error("fields outside spec.template changed the revision")
	}
}

func TestRolloutFields_EachKindGetsItsOwnFields(t *testing.T) {
	const (
		pcsMaxUnavailable = "spec.updateStrategy.rollingUpdate.maxUnavailable"
		pcsMaxSurge       = "spec.updateStrategy.rollingUpdate.maxSurge"
	)
	cases := []struct {
		name     string
		template string
		grant    align.Grant
		want     map[string]any
	}{
		{"deployment not started is paused", deployV1, align.Grant{},
			map[string]any{"spec.paused": true, "spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxUnavailable": int64(1), "spec.strategy.rollingUpdate.maxSurge": int64(0)}},
		{"deployment started with budget", deployV1, align.Grant{Started: true, MaxUnavailable: 2, MaxSurge: 1},
			map[string]any{"spec.paused": false, "spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxUnavailable": int64(2), "spec.strategy.rollingUpdate.maxSurge": int64(1)}},
		{"deployment with surge only", deployV1, align.Grant{Started: true, MaxSurge: 1},
			map[string]any{"spec.paused": false, "spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxUnavailable": int64(0), "spec.strategy.rollingUpdate.maxSurge": int64(1)}},
		{"deployment with no budget is paused, never 0/0", deployV1, align.Grant{Started: true},
			map[string]any{"spec.paused": true, "spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxUnavailable": int64(1), "spec.strategy.rollingUpdate.maxSurge": int64(0)}},
		{"deployment paused keeps its limits", deployV1, align.Grant{Started: true, Paused: true, MaxUnavailable: 3},
			map[string]any{"spec.paused": true, "spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxUnavailable": int64(3), "spec.strategy.rollingUpdate.maxSurge": int64(0)}},
		{"statefulset partition is the number held", stsV1, align.Grant{Started: true, Partition: 4},
			map[string]any{"spec.updateStrategy.type": "RollingUpdate", "spec.updateStrategy.rollingUpdate.partition": int64(4)}},
		{"podcliqueset partition and pause", pcsV1, align.Grant{Started: true, Partition: 2, Paused: true},
			map[string]any{"spec.paused": true, "spec.updateStrategy.rollingUpdate.partition": int64(2)}},
		{"podcliqueset of the default type: no limits, its CRD refuses them", pcsDefault, align.Grant{Started: true, Partition: 1},
			map[string]any{"spec.paused": false, "spec.updateStrategy.rollingUpdate.partition": int64(1)}},
		{"recreating podcliqueset: one replica in flight, no surge", pcsRecreate, align.Grant{Started: true, Partition: 3},
			map[string]any{"spec.paused": false, "spec.updateStrategy.rollingUpdate.partition": int64(3),
				pcsMaxUnavailable: int64(1), pcsMaxSurge: int64(0)}},
		{"recreating podcliqueset paused and fully held: the same limits", pcsRecreate, align.Grant{Started: true, Partition: 5, Paused: true},
			map[string]any{"spec.paused": true, "spec.updateStrategy.rollingUpdate.partition": int64(5),
				pcsMaxUnavailable: int64(1), pcsMaxSurge: int64(0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]any{}
			for _, f := range RolloutFields(mustParse(t, c.template), c.grant) {
				key := ""
				for i, p := range f.Path {
					if i > 0 {
						key += "."
					}
					key += p
				}
				got[key] = f.Value
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v\nwant %v", got, c.want)
			}
		})
	}
}

// A Deployment member that is not started keeps the pod template it runs; once
// started it gets the new one. Either way the grant reads back as written.
func TestBuild_NotStartedDeploymentKeepsItsTemplate(t *testing.T) {
	v1, v2 := mustParse(t, deployV1), mustParse(t, deployV2)
	held, err := Build(Object{Template: v1, Namespace: "ns", Name: "web", Replicas: 4, Grant: align.Grant{Started: true, MaxUnavailable: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got := held.GetLabels()[fleetv1alpha1.LabelFederatedWorkload]; got != "ns.web" {
		t.Errorf("label %q", got)
	}
	if r, _, _ := unstructured.NestedInt64(held.Object, "spec", "replicas"); r != 4 {
		t.Errorf("replicas %d", r)
	}
	image := func(u *unstructured.Unstructured) string {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		return cs[0].(map[string]any)["image"].(string)
	}

	kept, err := Build(Object{Template: v2, Namespace: "ns", Name: "web", Replicas: 5, Grant: align.Grant{}, Held: held})
	if err != nil {
		t.Fatal(err)
	}
	if image(kept) != "web:1" || kept.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] != v1.Revision {
		t.Errorf("not started: image %s revision %s, want the held web:1 %s", image(kept), kept.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision], v1.Revision)
	}
	if g := HeldGrant(Deployment, kept, v2.Revision); !reflect.DeepEqual(g, &align.Grant{}) {
		t.Errorf("held grant %+v, want not started", g)
	}

	started, err := Build(Object{Template: v2, Namespace: "ns", Name: "web", Replicas: 5, Grant: align.Grant{Started: true, MaxSurge: 2}, Held: kept})
	if err != nil {
		t.Fatal(err)
	}
	if image(started) != "web:2" {
		t.Errorf("started: image %s", image(started))
	}
	if g := HeldGrant(Deployment, started, v2.Revision); !reflect.DeepEqual(g, &align.Grant{Started: true, MaxSurge: 2}) {
		t.Errorf("held grant %+v", g)
	}
}

func TestHeldGrant_PartitionedMembers(t *testing.T) {
	sts, pcs := mustParse(t, stsV1), mustParse(t, pcsV1)
	s, _ := Build(Object{Template: sts, Namespace: "ns", Name: "db", Replicas: 6, Grant: align.Grant{Started: true, Partition: 4}})
	if g := HeldGrant(StatefulSet, s, sts.Revision); !reflect.DeepEqual(g, &align.Grant{Started: true, Partition: 4}) {
		t.Errorf("statefulset %+v", g)
	}
	if g := HeldGrant(StatefulSet, s, "other"); g != nil {
		t.Errorf("on another revision: %+v, want nil (start over)", g)
	}
	p, _ := Build(Object{Template: pcs, Namespace: "ns", Name: "x", Replicas: 3, Grant: align.Grant{Started: true, Partition: 1, Paused: true}})
	if g := HeldGrant(PodCliqueSet, p, pcs.Revision); !reflect.DeepEqual(g, &align.Grant{Started: true, Partition: 1, Paused: true}) {
		t.Errorf("podcliqueset %+v", g)
	}
	if ty, _, _ := unstructured.NestedString(p.Object, "spec", "updateStrategy", "type"); ty != "RollingUpdate" {
		t.Errorf("the template's own updateStrategy.type was lost: %q", ty)
	}
}

// A recreating PodCliqueSet member holds the limits the planner charges it
// for (one replica in flight, none above its share), not the template's own;
// one of another type holds none (its CRD refuses them). The grant reads back
// as written either way.
func TestBuild_PodCliqueSetLimitsAreTheHubs(t *testing.T) {
	grant := align.Grant{Started: true, Partition: 2}
	for _, c := range []struct {
		name, template string
		// limits: the object holds maxUnavailable 1 and maxSurge 0; else
		// neither.
		limits bool
	}{
		{"ReplicaRecreate with limits of its own", pcsRecreate, true},
		{"RollingUpdate", pcsV1, false},
		{"the default type", pcsDefault, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmpl := mustParse(t, c.template)
			obj, err := Build(Object{Template: tmpl, Namespace: "ns", Name: "x", Replicas: 4, Grant: grant})
			if err != nil {
				t.Fatal(err)
			}
			ru, _, _ := unstructured.NestedMap(obj.Object, "spec", "updateStrategy", "rollingUpdate")
			want := map[string]any{"partition": int64(2)}
			if c.limits {
				want["maxUnavailable"], want["maxSurge"] = int64(1), int64(0)
			}
			if !reflect.DeepEqual(ru, want) {
				t.Errorf("spec.updateStrategy.rollingUpdate is %v, want %v", ru, want)
			}
			if g := HeldGrant(PodCliqueSet, obj, tmpl.Revision); !reflect.DeepEqual(g, &grant) {
				t.Errorf("held grant %+v, want %+v", g, grant)
			}
			if tmpl.Recreates() != c.limits {
				t.Errorf("Recreates() = %v", tmpl.Recreates())
			}
		})
	}
	// The template it was built from is left as written.
	if ms, _, _ := unstructured.NestedFieldNoCopy(mustParse(t, pcsRecreate).Object.Object, "spec", "updateStrategy", "rollingUpdate", "maxSurge"); ms != float64(3) {
		t.Errorf("template maxSurge %v", ms)
	}
}

// The fields admission keeps out of a template are at least those the hub
// writes, for every kind and grant.
func TestOwnedRolloutFields_CoverWhatTheHubWrites(t *testing.T) {
	grants := []align.Grant{{}, {Started: true, MaxUnavailable: 2, MaxSurge: 1}, {Started: true, Partition: 2, Paused: true}}
	for _, raw := range []string{deployV1, stsV1, pcsV1, pcsDefault, pcsRecreate} {
		tmpl := mustParse(t, raw)
		owned := map[string]bool{}
		for _, p := range OwnedRolloutFields(tmpl.Kind) {
			owned[strings.Join(p, ".")] = true
		}
		for _, g := range grants {
			for _, f := range RolloutFields(tmpl, g) {
				if key := strings.Join(f.Path, "."); !owned[key] && !strings.HasSuffix(key, ".type") {
					t.Errorf("%s: the hub writes %s, which a template may set", tmpl.Kind, key)
				}
			}
		}
	}
}

func TestStatusOf(t *testing.T) {
	obj := func(gen, og, replicas, updated, available int64, rev string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"generation": gen, "annotations": map[string]any{fleetv1alpha1.AnnotationTemplateRevision: rev}},
			"status":   map[string]any{"observedGeneration": og, "replicas": replicas, "updatedReplicas": updated, "availableReplicas": available},
		}}
		return u
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want ObservedStatus
	}{
		{"current, mid-rollout", obj(3, 3, 6, 2, 5, "r2"), ObservedStatus{Status: align.Status{Replicas: 6, Updated: 2, UpdatedAvailable: 1, Available: 5}}},
		{"stale", obj(4, 3, 5, 5, 5, "r2"), ObservedStatus{Status: align.Status{Replicas: 5, Updated: 5, UpdatedAvailable: 5, Available: 5}, Stale: true}},
		{"holds the old revision: nothing updated", obj(2, 2, 5, 5, 5, "r1"), ObservedStatus{Status: align.Status{Replicas: 5, Available: 5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := StatusOf(c.obj, "r2"); got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestWithReplicaSets(t *testing.T) {
	dep := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"uid":         "d1",
		"annotations": map[string]any{fleetv1alpha1.AnnotationTemplateRevision: "r2", deploymentRevision: "2"},
	}}}
	rs := func(owner, revision string, spec, have, available int64) unstructured.Unstructured {
		return unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"generation": int64(1), "annotations": map[string]any{deploymentRevision: revision},
				"ownerReferences": []any{map[string]any{"uid": owner, "apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}}},
			"spec":   map[string]any{"replicas": spec},
			"status": map[string]any{"observedGeneration": int64(1), "replicas": have, "availableReplicas": available},
		}}
	}
	// The Deployment's status as its controller last wrote it: 5 pods, 2 new,
	// all available.
	status := ObservedStatus{Status: align.Status{Replicas: 5, Updated: 2, UpdatedAvailable: 2, Available: 5}}
	cases := []struct {
		name string
		rss  []unstructured.Unstructured
		want ObservedStatus
	}{
		{"settled: the status as it is", []unstructured.Unstructured{rs("d1", "2", 2, 2, 2), rs("d1", "1", 3, 3, 3), rs("other", "2", 9, 0, 0)},
			status},
		{"one more new pod asked for and one old pod let go, neither counted yet: counted, and settling",
			[]unstructured.Unstructured{rs("d1", "2", 3, 2, 2), rs("d1", "1", 2, 3, 3)},
			ObservedStatus{Status: align.Status{Replicas: 6, Updated: 3, UpdatedAvailable: 2, Available: 4, Settling: true}}},
		{"a ReplicaSet that has not seen its spec: settling, and none of its pods counted available",
			[]unstructured.Unstructured{rs("d1", "2", 2, 2, 2), func() unstructured.Unstructured {
				u := rs("d1", "1", 3, 3, 3)
				u.SetGeneration(2)
				return u
			}()}, ObservedStatus{Status: align.Status{Replicas: 5, Updated: 2, UpdatedAvailable: 2, Available: 2, Settling: true}}},
		// Its controller deleted 2 of its 3 pods when scaled to 1, reporting
		// the 3 it saw first; scaled back to 3 (a pause), the report matches
		// its spec, though only 1 pod runs: only its generation tells.
		{"a ReplicaSet scaled back up before it reported its deletes: none of its pods counted available",
			[]unstructured.Unstructured{rs("d1", "2", 2, 2, 2), func() unstructured.Unstructured {
				u := rs("d1", "1", 3, 3, 3)
				u.SetGeneration(3)
				_ = unstructured.SetNestedField(u.Object, int64(2), "status", "observedGeneration")
				return u
			}()}, ObservedStatus{Status: align.Status{Replicas: 5, Updated: 2, UpdatedAvailable: 2, Available: 2, Settling: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := WithReplicaSets(status, dep, c.rss, "r2"); got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
