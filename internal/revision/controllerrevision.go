package revision

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// stored is what a ControllerRevision holds: the template and the role hashes
// computed when it was made, so that an operator upgrade never re-derives them.
type stored struct {
	Template v1alpha1.PodCliqueSetTemplateSpec `json:"template"`
	Roles    []rollout.RoleRevision            `json:"roles"`
}

// NewControllerRevision is the ControllerRevision that keeps revision rev of the
// PodCliqueSet's template, number being its place in the history.
func NewControllerRevision(pcs *v1alpha1.PodCliqueSet, rev rollout.SetRevision, number int64) (*appsv1.ControllerRevision, error) {
	data, err := json.Marshal(stored{Template: pcs.Spec.Template, Roles: rev.Roles})
	if err != nil {
		return nil, fmt.Errorf("encoding revision %s: %w", rev.Name, err)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      rev.Name,
			Namespace: pcs.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelManagedBy:            v1alpha1.ManagedByValue,
				v1alpha1.LabelPodCliqueSet:         pcs.Name,
				v1alpha1.LabelPodCliqueSetRevision: rev.Name,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pcs, v1alpha1.GroupVersion.WithKind("PodCliqueSet"))},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}, nil
}

// Decode reads a ControllerRevision back into its set revision and template.
func Decode(cr *appsv1.ControllerRevision) (rollout.SetRevision, *v1alpha1.PodCliqueSetTemplateSpec, error) {
	var s stored
	if err := json.Unmarshal(cr.Data.Raw, &s); err != nil {
		return rollout.SetRevision{}, nil, fmt.Errorf("decoding ControllerRevision %s: %w", cr.Name, err)
	}
	return rollout.SetRevision{Name: cr.Name, Roles: s.Roles}, &s.Template, nil
}

// CliqueTemplate is one clique at a stored revision, with its hash as recorded
// in the revision.
func CliqueTemplate(cr *appsv1.ControllerRevision, clique string) (*v1alpha1.PodCliqueTemplateSpec, string, error) {
	rev, t, err := Decode(cr)
	if err != nil {
		return nil, "", err
	}
	c := t.Clique(clique)
	if c == nil {
		return nil, "", fmt.Errorf("revision %s has no clique %s", cr.Name, clique)
	}
	hash, ok := rev.Role(clique)
	if !ok {
		if hash, err = CliqueHash(c); err != nil {
			return nil, "", err
		}
	}
	return c, hash, nil
}
