package podcliqueset

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

func TestServicesWanted(t *testing.T) {
	plan := rollout.SetPlan{Replicas: []rollout.ReplicaPlan{{Index: 0}, {Index: 1}, {Index: 2}}}
	template := func(dns ...v1alpha1.PeerDNS) *v1alpha1.PodCliqueSetTemplateSpec {
		t := &v1alpha1.PodCliqueSetTemplateSpec{}
		for _, d := range dns {
			t.Cliques = append(t.Cliques, v1alpha1.PodCliqueTemplateSpec{PeerDNS: d})
		}
		return t
	}
	pod := func(subdomain string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Subdomain: subdomain}}
	}
	all := map[int32]bool{0: true, 1: true, 2: true}
	none := map[int32]bool{0: false, 1: false, 2: false}
	cases := []struct {
		name     string
		template *v1alpha1.PodCliqueSetTemplateSpec
		pods     map[int32][]*corev1.Pod
		want     map[int32]bool
	}{
		{"the default names every replica", template(""), nil, all},
		{"one clique with Replica is enough", template(v1alpha1.PeerDNSNone, v1alpha1.PeerDNSReplica), nil, all},
		{"every clique None: no Service", template(v1alpha1.PeerDNSNone, v1alpha1.PeerDNSNone),
			map[int32][]*corev1.Pod{0: {pod("")}, 2: {pod("")}}, none},
		{"a pod that still has its name keeps its replica's Service",
			template(v1alpha1.PeerDNSNone), map[int32][]*corev1.Pod{1: {pod(""), pod("set-1")}, 2: {pod("")}},
			map[int32]bool{0: false, 1: true, 2: false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := servicesWanted(plan, c.template, c.pods); !maps.Equal(got, c.want) {
				t.Fatalf("servicesWanted = %v, want %v", got, c.want)
			}
		})
	}
}
