package revision

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func spec() *v1alpha1.PodCliqueSetSpec {
	pod := func(image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	}
	return &v1alpha1.PodCliqueSetSpec{
		Replicas: new(int32(2)),
		Template: v1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []v1alpha1.PodCliqueTemplateSpec{
				{Name: "frontend", Replicas: 3, Template: pod("frontend:v1")},
				{Name: "decode-leader", Replicas: 1, Template: pod("engine:v1")},
				{Name: "decode-worker", Replicas: 2, Template: pod("engine:v1")},
			},
			PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
				{Name: "decode", CliqueNames: []string{"decode-leader", "decode-worker"}, Replicas: 2},
			},
		},
	}
}

func mustForSpec(t *testing.T, s *v1alpha1.PodCliqueSetSpec) map[string]string {
	t.Helper()
	rev, err := ForSpec("disagg", s)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"": rev.Name}
	for _, r := range rev.Roles {
		out[r.Role] = r.Revision
	}
	return out
}

// TestForSpec_IsStable pins the hashes of a fixed spec: if this changes, every
// running PodCliqueSet would roll when the operator is upgraded.
func TestForSpec_IsStable(t *testing.T) {
	got := mustForSpec(t, spec())
	golden := map[string]string{
		"":              "disagg-s47kg4p7wp",
		"frontend":      "cn7ndv9r9b",
		"decode-leader": "ht8b96rdg5",
		"decode-worker": "ht8b96rdg5",
		"decode":        "dxlb6qfp2j",
	}
	for k, v := range golden {
		if got[k] != v {
			t.Errorf("hash of %q = %q, pinned %q", k, got[k], v)
		}
	}
}

func TestForSpec_WhatMakesANewRevision(t *testing.T) {
	base := mustForSpec(t, spec())
	cases := []struct {
		name    string
		mutate  func(*v1alpha1.PodCliqueSetSpec)
		changed []string // roles whose hash must change; the set name changes iff any does
	}{
		{name: "PodCliqueSet replicas scale", mutate: func(s *v1alpha1.PodCliqueSetSpec) { *s.Replicas = 7 }},
		{name: "standalone clique replicas scale", mutate: func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Cliques[0].Replicas = 9 }},
		{name: "standalone clique minAvailable is a gang setting", mutate: func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Cliques[0].MinAvailable = new(int32(1)) }},
		{name: "group replicas scale", mutate: func(s *v1alpha1.PodCliqueSetSpec) { s.Template.PodCliqueScalingGroups[0].Replicas = 5 }},
		{name: "update strategies are not templates", mutate: func(s *v1alpha1.PodCliqueSetSpec) {
			s.UpdateStrategy.Type = v1alpha1.OnDeleteStrategyType
			s.Paused = true
			s.MinReadySeconds = 10
		}},
		{name: "frontend image", mutate: func(s *v1alpha1.PodCliqueSetSpec) {
			s.Template.Cliques[0].Template.Spec.Containers[0].Image = "frontend:v2"
		}, changed: []string{"frontend"}},
		{name: "worker image changes the worker and its group", mutate: func(s *v1alpha1.PodCliqueSetSpec) {
			s.Template.Cliques[2].Template.Spec.Containers[0].Image = "engine:v2"
		}, changed: []string{"decode-worker", "decode"}},
		{name: "workers per leader reshape the group", mutate: func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Cliques[2].Replicas = 4 },
			changed: []string{"decode"}},
		{name: "pod labels are part of the template", mutate: func(s *v1alpha1.PodCliqueSetSpec) {
			s.Template.Cliques[0].Template.Labels = map[string]string{"tier": "web"}
		}, changed: []string{"frontend"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.mutate(s)
			got := mustForSpec(t, s)
			changed := map[string]bool{}
			for _, r := range tc.changed {
				changed[r] = true
			}
			for role, h := range base {
				if role == "" {
					continue
				}
				if (got[role] != h) != changed[role] {
					t.Errorf("role %s: hash changed = %v, want %v", role, got[role] != h, changed[role])
				}
			}
			if (got[""] != base[""]) != (len(tc.changed) > 0) {
				t.Errorf("set revision changed = %v, want %v", got[""] != base[""], len(tc.changed) > 0)
			}
		})
	}
}

func TestForSpec_ReorderingCliquesKeepsTheRevision(t *testing.T) {
	s := spec()
	c := s.Template.Cliques
	c[0], c[2] = c[2], c[0]
	s.Template.PodCliqueScalingGroups[0].CliqueNames = []string{"decode-worker", "decode-leader"}
	if got, want := mustForSpec(t, s), mustForSpec(t, spec()); got[""] != want[""] {
		t.Fatalf("reordering changed the revision: %s != %s", got[""], want[""])
	}
}
