package federatedworkload

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
)

// At every round of `lockstep plan`'s simulated fleet, each member received
// exactly the request this controller sends for the round's write
// (memberRequest), and what it received reads back, as the next round reads
// it, as the share and grant the planner decided: the simulator's members run
// on the controller's encoding, not on a copy of it.
func TestMemberObjects_TheControllerSendsWhatPlansMembersReceive(t *testing.T) {
	for _, sc := range encodeScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			compared := 0
			in := sc.in
			in.Startup = 10 * time.Second
			in.OnRound = func(rd fleetplan.Round) { compared += compareRound(t, rd) }
			res, err := fleetplan.Run(in)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Done || len(res.Breaches) > 0 {
				t.Fatalf("the simulated rollout did not complete within its bounds: done %v, %v", res.Done, res.Breaches)
			}
			if compared == 0 {
				t.Fatal("no write compared")
			}
		})
	}
}

// compareRound checks every write of one round against what its member
// received and returns how many it compared.
func compareRound(t *testing.T, rd fleetplan.Round) int {
	t.Helper()
	fw := rd.In.Workload
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]align.MemberPlan{}
	for _, mp := range rd.Out.Plan.Members {
		plans[mp.Name] = mp
	}
	shares := map[string]int32{}
	for _, c := range rd.Out.Status.Clusters {
		shares[c.Name] = c.DesiredReplicas
	}
	for _, w := range rd.Out.Writes {
		got := rd.Received[w.Cluster]
		if len(got) != 1 {
			t.Fatalf("round at %s: cluster %s received %d requests for one write", rd.In.Now, w.Cluster, len(got))
		}
		recv := got[0]
		if recv.Op != string(w.Op) {
			t.Fatalf("cluster %s: the controller sends a %s, the member received a %s", w.Cluster, w.Op, recv.Op)
		}
		if sent := memberRequest(w); !equality.Semantic.DeepEqual(sent.Object, recv.Object.Object) {
			t.Fatalf("cluster %s: the controller sends\n%s\nthe member received\n%s", w.Cluster, asJSON(sent), asJSON(recv.Object))
		}
		read := rd.In.Members[w.Cluster].Object
		if w.Op == round.Delete {
			if read == nil || recv.UID != read.GetUID() || recv.ResourceVersion != read.GetResourceVersion() {
				t.Fatalf("cluster %s: a delete guarded by uid %s, resourceVersion %s, for the object read %v", w.Cluster, recv.UID, recv.ResourceVersion, read)
			}
			continue
		}
		mp, ok := plans[w.Cluster]
		if !ok {
			t.Fatalf("cluster %s: written without a plan", w.Cluster)
		}
		checkDecodes(t, w.Cluster, fw, tmpl, recv.Object, read, heldBack(rd.In, tmpl.Revision), mp, shares[w.Cluster])
	}
	return len(rd.Out.Writes)
}

// checkDecodes: the object a member received reads back, as the hub reads a
// member object, as the planner's decision for it.
func checkDecodes(t *testing.T, cluster string, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template,
	obj, read, held *unstructured.Unstructured, mp align.MemberPlan, share int32) {
	t.Helper()
	if obj.GetNamespace() != fw.Namespace || obj.GetName() != fw.Name || obj.GetLabels()[fleetv1alpha1.LabelFederatedWorkload] != fw.Namespace+"."+fw.Name {
		t.Fatalf("cluster %s: the member object is %s/%s labelled %v", cluster, obj.GetNamespace(), obj.GetName(), obj.GetLabels())
	}
	if read != nil && obj.GetUID() != read.GetUID() {
		t.Fatalf("cluster %s: an apply for uid %q, the object read is %q", cluster, obj.GetUID(), read.GetUID())
	}
	if read == nil && obj.GetUID() != "" {
		t.Fatalf("cluster %s: a create carries uid %q", cluster, obj.GetUID())
	}
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if int32(replicas) != mp.Replicas || int32(replicas) != share {
		t.Fatalf("cluster %s: spec.replicas %d, the plan gives %d and the status records %d", cluster, replicas, mp.Replicas, share)
	}
	rev := tmpl.Revision
	if want := align.Stored(tmpl.Kind.Align(), mp.Grant); !equality.Semantic.DeepEqual(member.HeldGrant(tmpl.Kind, obj, rev), &want) {
		t.Fatalf("cluster %s: the object holds grant %+v, the plan gives %+v", cluster, member.HeldGrant(tmpl.Kind, obj, rev), want)
	}
	if tmpl.Kind == member.PodCliqueSet {
		// A recreating member holds the limits the planner charges it for;
		// any other holds none (its CRD refuses them).
		ru, _, _ := unstructured.NestedMap(obj.Object, "spec", "updateStrategy", "rollingUpdate")
		mu, hasMU := ru["maxUnavailable"]
		ms, hasMS := ru["maxSurge"]
		if recreates := tmpl.Recreates(); recreates && (mu != int64(align.PartitionedInFlight) || ms != int64(0)) || !recreates && (hasMU || hasMS) {
			t.Fatalf("cluster %s: a PodCliqueSet (ReplicaRecreate %v) holds maxUnavailable %v, maxSurge %v", cluster, recreates, mu, ms)
		}
	}
	podTemplate, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "template")
	wantTemplate, _, _ := unstructured.NestedFieldNoCopy(tmpl.Object.Object, "spec", "template")
	wantRev := rev
	if tmpl.Kind == member.Deployment && !mp.Grant.Started {
		// Not started: it keeps the pod template it holds, or, new, takes the
		// one the rollout holds back.
		if read == nil {
			read = held
		}
		if read != nil {
			wantTemplate, _, _ = unstructured.NestedFieldNoCopy(read.Object, "spec", "template")
			wantRev = read.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision]
		}
	}
	if !equality.Semantic.DeepEqual(podTemplate, wantTemplate) || obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] != wantRev {
		t.Fatalf("cluster %s: the object holds pod template %v (revision %s), want %v (%s)", cluster, podTemplate,
			obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision], wantTemplate, wantRev)
	}
}

// heldBack is a member object of the round that holds another revision than
// rev: the template a new Deployment member not started takes.
func heldBack(in round.Input, rev string) *unstructured.Unstructured {
	var names []string
	for name := range in.Members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if o := in.Members[name].Object; o != nil && o.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] != rev {
			return o
		}
	}
	return nil
}

type encodeScenario struct {
	name string
	in   fleetplan.Input
}

// encodeScenarios are the fleet example rolled to a new image as it is and
// as a StatefulSet and a PodCliqueSet, with a partition, with percentages,
// re-divided at the same time, and while a cluster leaves and another joins.
func encodeScenarios(t *testing.T) []encodeScenario {
	from := readFleetExample(t)
	eu1, us1 := fleetplan.Cluster{Name: "eu-1", Labels: map[string]string{"region": "eu"}}, fleetplan.Cluster{Name: "us-1", Labels: map[string]string{"region": "us"}}
	us2 := fleetplan.Cluster{Name: "us-2", Labels: map[string]string{"region": "us"}}
	two := []fleetplan.Cluster{eu1, us1}
	rolled := func(fw *fleetv1alpha1.FederatedWorkload, edit func(*fleetv1alpha1.FederatedWorkload)) (*fleetv1alpha1.FederatedWorkload, *fleetv1alpha1.FederatedWorkload) {
		fw = fw.DeepCopy()
		if edit != nil {
			edit(fw)
		}
		to := fw.DeepCopy()
		to.Spec.Template.Raw = bytes.ReplaceAll(to.Spec.Template.Raw, []byte(`"web:v1"`), []byte(`"web:v2"`))
		return fw, to
	}
	sts := func(fw *fleetv1alpha1.FederatedWorkload) {
		setTemplate(t, fw, func(tmpl map[string]any) {
			tmpl["kind"] = "StatefulSet"
			_ = unstructured.SetNestedField(tmpl, "web", "spec", "serviceName")
		})
		zero := intstr.FromInt32(0)
		fw.Spec.RolloutStrategy.MaxSurge = &zero
	}
	var out []encodeScenario
	add := func(name string, kind member.Kind, clusters []fleetplan.Cluster, edit func(*fleetv1alpha1.FederatedWorkload), after func(*fleetv1alpha1.FederatedWorkload)) {
		f, to := rolled(from, edit)
		if after != nil {
			after(to)
		}
		out = append(out, encodeScenario{name: name, in: fleetplan.Input{From: f, Workload: to, Kind: kind, Clusters: clusters}})
	}
	moved := func(name string, kind member.Kind, edit func(*fleetv1alpha1.FederatedWorkload)) {
		f, to := rolled(from, edit)
		out = append(out, encodeScenario{name: name, in: fleetplan.Input{From: f, Workload: to, Kind: kind,
			Before: []fleetplan.Cluster{eu1, us1}, Clusters: []fleetplan.Cluster{eu1, us2}}})
	}
	add("deployment", member.Deployment, two, nil, nil)
	add("deployment with a partition", member.Deployment, []fleetplan.Cluster{eu1, us1, us2}, func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.RolloutStrategy.Partition = 4
	}, nil)
	add("deployment in percentages", member.Deployment, two, func(fw *fleetv1alpha1.FederatedWorkload) {
		mu, ms := intstr.FromString("25%"), intstr.FromString("10%")
		fw.Spec.RolloutStrategy.MaxUnavailable, fw.Spec.RolloutStrategy.MaxSurge = &mu, &ms
	}, nil)
	add("deployment re-divided while it rolls", member.Deployment, two, nil, func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.Division.Weights[0].Weight = 3
	})
	add("statefulset", member.StatefulSet, two, sts, nil)
	add("statefulset with a partition", member.StatefulSet, []fleetplan.Cluster{eu1, us1, us2}, func(fw *fleetv1alpha1.FederatedWorkload) {
		sts(fw)
		fw.Spec.RolloutStrategy.Partition = 3
	}, nil)
	pcs := func(strategy map[string]any) func(*fleetv1alpha1.FederatedWorkload) {
		return func(fw *fleetv1alpha1.FederatedWorkload) {
			setTemplate(t, fw, func(tmpl map[string]any) {
				tmpl["apiVersion"], tmpl["kind"] = "lockstep.dev/v1alpha1", "PodCliqueSet"
				pod, _, _ := unstructured.NestedMap(tmpl, "spec", "template")
				tmpl["spec"] = map[string]any{"template": map[string]any{"cliques": []any{map[string]any{"name": "web", "replicas": int64(1), "template": pod}}}}
				if strategy != nil {
					_ = unstructured.SetNestedMap(tmpl, strategy, "spec", "updateStrategy")
				}
			})
			zero := intstr.FromInt32(0)
			fw.Spec.RolloutStrategy.MaxSurge = &zero
			fw.Spec.RolloutStrategy.Partition = 2
		}
	}
	add("podcliqueset", member.PodCliqueSet, two, pcs(nil), nil)
	// Its own limits, as a template stored before admission refused them
	// would carry: the members hold the hub's.
	add("podcliqueset that recreates replicas", member.PodCliqueSet, two, pcs(map[string]any{"type": "ReplicaRecreate",
		"rollingUpdate": map[string]any{"maxUnavailable": int64(3), "maxSurge": int64(2)}}), nil)
	moved("deployment while us-1 leaves and us-2 joins", member.Deployment, nil)
	moved("statefulset while us-1 leaves and us-2 joins", member.StatefulSet, sts)
	return out
}

// readFleetExample is examples/fleet/web.yaml: a Deployment of 10 split 2:3
// over region=eu and region=us, maxUnavailable 2, maxSurge 1.
func readFleetExample(t *testing.T) *fleetv1alpha1.FederatedWorkload {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "fleet", "web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fw fleetv1alpha1.FederatedWorkload
	if err := yaml.UnmarshalStrict(data, &fw); err != nil {
		t.Fatal(err)
	}
	return &fw
}

// setTemplate edits a workload's template as a map.
func setTemplate(t *testing.T, fw *fleetv1alpha1.FederatedWorkload, edit func(map[string]any)) {
	var tmpl map[string]any
	if err := json.Unmarshal(fw.Spec.Template.Raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	edit(tmpl)
	raw, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	fw.Spec.Template.Raw = raw
}

func asJSON(u *unstructured.Unstructured) string {
	data, _ := json.MarshalIndent(u.Object, "", "  ")
	return string(data)
}

// TestMemberObjects_ScenariosReceiveEveryKindOfWrite keeps the scenarios
// honest: together they create, apply and delete member objects.
func TestMemberObjects_ScenariosReceiveEveryKindOfWrite(t *testing.T) {
	ops := map[string]int{}
	for _, sc := range encodeScenarios(t) {
		in := sc.in
		in.Startup = time.Second
		in.OnRound = func(rd fleetplan.Round) {
			for _, reqs := range rd.Received {
				for _, r := range reqs {
					ops[r.Op]++
				}
			}
		}
		if _, err := fleetplan.Run(in); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range []string{fleetsim.OpCreate, fleetsim.OpApply, fleetsim.OpDelete} {
		if ops[op] == 0 {
			t.Errorf("no %s in any scenario: %v", op, ops)
		}
	}
}
