package member

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// SetApplied records on obj, the object about to be written, the digest of
// what it writes (annotation fleet.lockstep.dev/applied): every field but
// its UID and the digest itself. Call it last, once obj is complete.
func SetApplied(obj *unstructured.Unstructured) {
	ann := maps.Clone(obj.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	ann[fleetv1alpha1.AnnotationApplied] = appliedDigest(obj)
	obj.SetAnnotations(ann)
}

// Unchanged says whether writing obj (complete, with SetApplied) over held,
// the member object as read, would change nothing: held was last written
// with exactly obj's fields (the same digest, so no field the hub used to
// write is to be dropped) and still holds each of their values (no one
// changed one since: a `kubectl scale` or an edit of a granted field is
// written back). A round then sends no write for it. A value the member's
// apiserver keeps in another form than written (a quantity) reads as
// changed, and is written every time, as before.
func Unchanged(held, obj *unstructured.Unstructured) bool {
	if held == nil {
		return false
	}
	digest := obj.GetAnnotations()[fleetv1alpha1.AnnotationApplied]
	if digest == "" || held.GetAnnotations()[fleetv1alpha1.AnnotationApplied] != digest {
		return false
	}
	return within(stringMap(obj.GetLabels()), stringMap(held.GetLabels())) &&
		within(stringMap(obj.GetAnnotations()), stringMap(held.GetAnnotations())) &&
		within(obj.Object["spec"], held.Object["spec"])
}

// appliedDigest hashes obj without its UID and its digest annotation.
// encoding/json writes map keys sorted, so equal objects hash equally.
func appliedDigest(obj *unstructured.Unstructured) string {
	c := obj.DeepCopy()
	c.SetUID("")
	ann := c.GetAnnotations()
	delete(ann, fleetv1alpha1.AnnotationApplied)
	c.SetAnnotations(ann)
	raw, err := json.Marshal(c.Object)
	if err != nil {
		return "" // never the same as a recorded digest: the object is written
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
