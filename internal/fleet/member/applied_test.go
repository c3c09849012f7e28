package member

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// Unchanged holds only when the member holds exactly what was last written
// (the same fields, by the digest) with every value as written; defaults the
// member's apiserver added do not count.
func TestUnchanged(t *testing.T) {
	written := func(edit func(map[string]any)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"spec": map[string]any{"replicas": int64(2), "minReadySeconds": int64(5), "paused": true,
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "web:1"}}}}}}}
		u.SetNamespace("shop")
		u.SetName("web")
		u.SetLabels(map[string]string{fleetv1alpha1.LabelFederatedWorkload: "shop.web"})
		u.SetAnnotations(map[string]string{fleetv1alpha1.AnnotationTemplateRevision: "r1"})
		if edit != nil {
			edit(u.Object)
		}
		SetApplied(u)
		return u
	}
	// held is what the member holds after obj was written: obj, with a
	// defaulted field, a status and another writer's annotation.
	heldAfter := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		h := obj.DeepCopy()
		h.SetUID("uid-1")
		_ = unstructured.SetNestedField(h.Object, int64(10), "spec", "revisionHistoryLimit")
		_ = unstructured.SetNestedField(h.Object, "IfNotPresent", "spec", "template", "spec", "containers", "0", "imagePullPolicy")
		h.Object["status"] = map[string]any{"replicas": int64(2)}
		ann := h.GetAnnotations()
		ann["deployment.kubernetes.io/revision"] = "3"
		h.SetAnnotations(ann)
		return h
	}
	obj := written(nil)
	cases := []struct {
		name string
		held *unstructured.Unstructured
		want bool
	}{
		{"as written, with defaults", heldAfter(obj), true},
		{"scaled in the member", func() *unstructured.Unstructured {
			h := heldAfter(obj)
			_ = unstructured.SetNestedField(h.Object, int64(5), "spec", "replicas")
			return h
		}(), false},
		{"a written field removed in the member", func() *unstructured.Unstructured {
			h := heldAfter(obj)
			unstructured.RemoveNestedField(h.Object, "spec", "minReadySeconds")
			return h
		}(), false},
		{"a label changed in the member", func() *unstructured.Unstructured {
			h := heldAfter(obj)
			h.SetLabels(map[string]string{fleetv1alpha1.LabelFederatedWorkload: "shop.api"})
			return h
		}(), false},
		// The hub now writes one field less: it must be written, so that
		// server-side apply drops the field it owned.
		{"written with a field more than now", heldAfter(written(func(o map[string]any) {
			o["spec"].(map[string]any)["progressDeadlineSeconds"] = int64(60)
		})), false},
		{"written by a hub without the digest", func() *unstructured.Unstructured {
			h := heldAfter(obj)
			ann := h.GetAnnotations()
			delete(ann, fleetv1alpha1.AnnotationApplied)
			h.SetAnnotations(ann)
			return h
		}(), false},
		{"not there", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Unchanged(c.held, obj); got != c.want {
				t.Errorf("Unchanged = %v, want %v", got, c.want)
			}
		})
	}
}
