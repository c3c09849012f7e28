//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// zeroPCS asks for a scaling group of no replicas whose worker clique has no
// pods.
const zeroPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: zero
spec:
  replicas: 1
  template:
    cliques:
    - name: leader
      template: &pod
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
    - name: worker
      replicas: 0
      template: *pod
    podCliqueScalingGroups:
    - name: shard
      cliqueNames: [leader, worker]
      replicas: 0
`

// Found by the crash tests: a typed Go client sent replicas: 0 for every clique
// and scaling group it left unset (the CRD default never applied), and the
// operator then failed on such a PodCliqueSet forever. Now an unset field is
// left out and defaults to 1, and an explicit 0 is refused at admission with
// the field named.
func TestRegression_ZeroReplicasAreRefusedAndUnsetOnesDefault(t *testing.T) {
	ns := newNamespace(t, "zero")
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(zeroPCS), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	err := testCluster.Client.Create(t.Context(), u)
	for _, field := range []string{"spec.template.cliques[1].replicas", "spec.template.podCliqueScalingGroups[0].replicas"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("creating with %s: 0: got %v, want a refusal naming the field", field, err)
		}
	}

	typed := parsePCS(t, zeroPCS) // replicas 0 in Go means "not set"
	typed.Namespace = ns
	if err := testCluster.Client.Create(t.Context(), typed); err != nil {
		t.Fatalf("a typed PodCliqueSet with replicas left unset: %v", err)
	}
	if got, g := typed.Spec.Template.Cliques[1].Replicas, typed.Spec.Template.PodCliqueScalingGroups[0].Replicas; got != 1 || g != 1 {
		t.Fatalf("unset replicas came back as clique %d, group %d; want the default 1", got, g)
	}
}
