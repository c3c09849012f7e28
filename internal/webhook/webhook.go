// Package webhook is Lockstep's admission: defaulting and validation of
// PodCliqueSets, and validation of the child kinds a user can edit or scale.
// The rules live in internal/validation, plain functions that are table-tested
// and fuzzed without an apiserver and that the PodCliqueSet controller checks
// too; this package only adapts them to admission.
package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/validation"
)

// Paths the webhooks are served on (controller-runtime's convention); the webhook
// configurations in config/webhook and the dev-mode registration use them.
const (
	MutatePodCliqueSetPath            = "/mutate-lockstep-dev-v1alpha1-podcliqueset"
	ValidatePodCliqueSetPath          = "/validate-lockstep-dev-v1alpha1-podcliqueset"
	ValidatePodCliquePath             = "/validate-lockstep-dev-v1alpha1-podclique"
	ValidatePodCliqueScalingGroupPath = "/validate-lockstep-dev-v1alpha1-podcliquescalinggroup"
)

// +kubebuilder:webhook:path=/mutate-lockstep-dev-v1alpha1-podcliqueset,mutating=true,failurePolicy=fail,sideEffects=None,groups=lockstep.dev,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=mpodcliqueset.lockstep.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-podcliqueset,mutating=false,failurePolicy=fail,sideEffects=None,groups=lockstep.dev,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=vpodcliqueset.lockstep.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-podclique,mutating=false,failurePolicy=fail,sideEffects=None,groups=lockstep.dev,resources=podcliques,verbs=create;update,versions=v1alpha1,name=vpodclique.lockstep.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-lockstep-dev-v1alpha1-podcliquescalinggroup,mutating=false,failurePolicy=fail,sideEffects=None,groups=lockstep.dev,resources=podcliquescalinggroups,verbs=create;update,versions=v1alpha1,name=vpodcliquescalinggroup.lockstep.dev,admissionReviewVersions=v1

// Setup registers every Lockstep webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.PodCliqueSet{}).
		WithDefaulter(PodCliqueSetDefaulter{}).
		WithValidator(PodCliqueSetValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering PodCliqueSet webhooks: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.PodClique{}).
		WithValidator(PodCliqueValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering PodClique webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.PodCliqueScalingGroup{}).
		WithValidator(PodCliqueScalingGroupValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering PodCliqueScalingGroup webhook: %w", err)
	}
	return nil
}

// PodCliqueSetDefaulter applies the API defaults (v1alpha1.PodCliqueSet.Default).
type PodCliqueSetDefaulter struct{}

// Default implements admission.Defaulter.
func (PodCliqueSetDefaulter) Default(_ context.Context, pcs *v1alpha1.PodCliqueSet) error {
	pcs.Default()
	return nil
}

// PodCliqueSetValidator rejects invalid PodCliqueSets with every error at once.
type PodCliqueSetValidator struct{}

// ValidateCreate implements admission.Validator.
func (PodCliqueSetValidator) ValidateCreate(_ context.Context, pcs *v1alpha1.PodCliqueSet) (admission.Warnings, error) {
	errs, warnings := validation.ValidatePodCliqueSet(pcs)
	return warnings, invalid(v1alpha1.GroupVersion.WithKind("PodCliqueSet").GroupKind(), pcs.Name, errs)
}

// ValidateUpdate implements admission.Validator. Status-only updates are not sent
// here: the webhook is registered for the main resource only.
func (PodCliqueSetValidator) ValidateUpdate(_ context.Context, oldPCS, newPCS *v1alpha1.PodCliqueSet) (admission.Warnings, error) {
	errs, warnings := validation.ValidatePodCliqueSetUpdate(oldPCS, newPCS)
	return warnings, invalid(v1alpha1.GroupVersion.WithKind("PodCliqueSet").GroupKind(), newPCS.Name, errs)
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (PodCliqueSetValidator) ValidateDelete(context.Context, *v1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return nil, nil
}

// PodCliqueValidator checks the fields of a PodClique a user may change (for
// example replicas through /scale).
type PodCliqueValidator struct{}

// ValidateCreate implements admission.Validator.
func (PodCliqueValidator) ValidateCreate(_ context.Context, pclq *v1alpha1.PodClique) (admission.Warnings, error) {
	errs, warnings := validation.ValidatePodClique(pclq)
	return warnings, invalid(v1alpha1.GroupVersion.WithKind("PodClique").GroupKind(), pclq.Name, errs)
}

// ValidateUpdate implements admission.Validator.
func (PodCliqueValidator) ValidateUpdate(_ context.Context, _, pclq *v1alpha1.PodClique) (admission.Warnings, error) {
	errs, warnings := validation.ValidatePodClique(pclq)
	return warnings, invalid(v1alpha1.GroupVersion.WithKind("PodClique").GroupKind(), pclq.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (PodCliqueValidator) ValidateDelete(context.Context, *v1alpha1.PodClique) (admission.Warnings, error) {
	return nil, nil
}

// PodCliqueScalingGroupValidator checks the fields of a PodCliqueScalingGroup a
// user may change, and keeps its cliques fixed.
type PodCliqueScalingGroupValidator struct{}

// ValidateCreate implements admission.Validator.
func (PodCliqueScalingGroupValidator) ValidateCreate(_ context.Context, g *v1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	errs, warnings := validation.ValidatePodCliqueScalingGroup(g)
	return warnings, invalid(v1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup").GroupKind(), g.Name, errs)
}

// ValidateUpdate implements admission.Validator.
func (PodCliqueScalingGroupValidator) ValidateUpdate(_ context.Context, oldG, g *v1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	errs, warnings := validation.ValidatePodCliqueScalingGroupUpdate(oldG, g)
	return warnings, invalid(v1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup").GroupKind(), g.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (PodCliqueScalingGroupValidator) ValidateDelete(context.Context, *v1alpha1.PodCliqueScalingGroup) (admission.Warnings, error) {
	return nil, nil
}

func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}
