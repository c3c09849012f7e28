package podclique

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// podTemplate is a template pods can be made from, with its hash and the
// PodCliqueSet revision it belongs to.
type podTemplate struct {
	spec        *corev1.PodTemplateSpec
	peerDNS     v1alpha1.PeerDNS
	hash        string
	setRevision string
}

// revisionTemplates are the two templates a PodClique may create pods from: the
// one it moves to, and the one held-back pods are recreated from.
type revisionTemplates struct {
	update, current podTemplate
}

// templates reads the update template from the spec and, when the owner names a
// different current revision, the current template from that ControllerRevision.
func (r *Reconciler) templates(ctx context.Context, pclq *v1alpha1.PodClique) (revisionTemplates, error) {
	hash, err := revision.PodCliqueHash(pclq)
	if err != nil {
		return revisionTemplates{}, fmt.Errorf("hashing the template of PodClique %s: %w", pclq.Name, err)
	}
	update := podTemplate{spec: &pclq.Spec.Template, peerDNS: pclq.Spec.PeerDNS, hash: hash, setRevision: pclq.Spec.Revision}
	cur := pclq.Spec.UpdateStrategy.CurrentRevision
	if cur == "" || cur == pclq.Spec.Revision {
		return revisionTemplates{update: update, current: update}, nil
	}
	var cr appsv1.ControllerRevision
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: cur}, &cr); err != nil {
		return revisionTemplates{}, fmt.Errorf("reading revision %s for PodClique %s: %w", cur, pclq.Name, err)
	}
	c, curHash, err := revision.CliqueTemplate(&cr, pclq.Labels[v1alpha1.LabelClique])
	if err != nil {
		return revisionTemplates{}, err
	}
	return revisionTemplates{update: update, current: podTemplate{spec: &c.Template, peerDNS: c.PeerDNS, hash: curHash, setRevision: cur}}, nil
}

// forHash returns the template with the given hash.
func (t revisionTemplates) forHash(hash string) (podTemplate, bool) {
	switch hash {
	case t.update.hash:
		return t.update, true
	case t.current.hash:
		return t.current, true
	}
	return podTemplate{}, false
}
