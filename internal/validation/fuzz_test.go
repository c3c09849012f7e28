package validation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// checkNeverPanics runs everything admission does with an object: defaulting,
// create and update validation, and the child validators on objects built from it.
func checkNeverPanics(t *testing.T, pcs *v1alpha1.PodCliqueSet) {
	t.Helper()
	old := pcs.DeepCopy()
	pcs.Default()
	_, _ = ValidatePodCliqueSet(pcs)
	_, _ = ValidatePodCliqueSetUpdate(old, pcs)
	_, _ = ValidatePodCliqueSetUpdate(disagg(), pcs)
	// Defaulting is idempotent: a second pass changes nothing.
	again := pcs.DeepCopy()
	again.Default()
	a, _ := json.Marshal(pcs)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Fatalf("defaulting is not idempotent:\n%s\n%s", a, b)
	}
	for i := range pcs.Spec.Template.Cliques {
		c := pcs.Spec.Template.Cliques[i]
		validatePodClique(&v1alpha1.PodClique{Spec: v1alpha1.PodCliqueSpec{Replicas: c.Replicas, MinAvailable: c.MinAvailable, Template: c.Template}})
	}
	g := &v1alpha1.PodCliqueScalingGroup{Spec: v1alpha1.PodCliqueScalingGroupSpec{Cliques: pcs.Spec.Template.Cliques}}
	validateScalingGroup(g)
}

// FuzzPodCliqueSetJSON feeds arbitrary JSON (seeded with every example and every
// invalid manifest) through defaulting and validation.
func FuzzPodCliqueSetJSON(f *testing.F) {
	for _, glob := range []string{"../../examples/*.yaml", "../../test/testdata/invalid/*.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			for _, doc := range strings.Split(string(data), "\n---\n") {
				js, err := yaml.YAMLToJSON([]byte(doc))
				if err != nil {
					f.Fatalf("%s: %v", p, err)
				}
				f.Add(js)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pcs v1alpha1.PodCliqueSet
		if err := json.Unmarshal(data, &pcs); err != nil {
			return
		}
		checkNeverPanics(t, &pcs)
	})
}

// FuzzPodCliqueSetFields varies the numbers and strings validation reasons about,
// on the disaggregated shape, so the fuzzer spends its time on the rules rather
// than on JSON syntax.
func FuzzPodCliqueSetFields(f *testing.F) {
	f.Add(int32(2), "RollingUpdate", "1", "0", "decode", "100%", int32(3), int32(1), int32(2), "disagg", int32(0))
	f.Add(int32(0), "ReplicaRecreate", "0%", "34%", "prefill", "0", int32(0), int32(0), int32(-1), "", int32(-3))
	f.Add(int32(-5), "OnDelete", "-1", "abc", "frontend", "1000%", int32(1<<30), int32(-1), int32(0), strings.Repeat("x", 80), int32(1<<30))
	f.Fuzz(func(t *testing.T, replicas int32, typ, mu, ms, role, updateTo string, cliqueReplicas, minAvail, groupReplicas int32, name string, partition int32) {
		pcs := disagg()
		pcs.Name = name
		pcs.Spec.Replicas = &replicas
		pcs.Spec.UpdateStrategy.Type = v1alpha1.UpdateStrategyType(typ)
		pcs.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{MaxUnavailable: ios(mu), MaxSurge: ios(ms), Partition: &partition}
		pcs.Spec.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
			{Role: role, UpdateTo: intstr.Parse(updateTo)}, {Role: "decode", UpdateTo: intstr.Parse(updateTo)},
		}}
		pcs.Spec.Template.Cliques[0].Replicas = cliqueReplicas
		pcs.Spec.Template.Cliques[0].MinAvailable = &minAvail
		pcs.Spec.Template.Cliques[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: ios(ms), MaxSurge: ios(mu)}
		pcs.Spec.Template.PodCliqueScalingGroups[0].Replicas = groupReplicas
		pcs.Spec.Template.PodCliqueScalingGroups[1].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxSurge: ios(updateTo)}
		checkNeverPanics(t, pcs)
	})
}
