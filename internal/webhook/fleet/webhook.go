package fleet

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// Paths the hub's webhooks are served on; config/fleet/webhook and the dev-mode
// registration use them.
const (
	ValidateMemberClusterPath     = "/validate-fleet-lockstep-dev-v1alpha1-membercluster"
	ValidatePlacementPath         = "/validate-fleet-lockstep-dev-v1alpha1-placement"
	ValidateFederatedWorkloadPath = "/validate-fleet-lockstep-dev-v1alpha1-federatedworkload"
)

// +kubebuilder:webhook:path=/validate-fleet-lockstep-dev-v1alpha1-membercluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=fleet.lockstep.dev,resources=memberclusters,verbs=create;update,versions=v1alpha1,name=vmembercluster.fleet.lockstep.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-fleet-lockstep-dev-v1alpha1-placement,mutating=false,failurePolicy=fail,sideEffects=None,groups=fleet.lockstep.dev,resources=placements,verbs=create;update,versions=v1alpha1,name=vplacement.fleet.lockstep.dev,admissionReviewVersions=v1

// +kubebuilder:webhook:path=/validate-fleet-lockstep-dev-v1alpha1-federatedworkload,mutating=false,failurePolicy=fail,sideEffects=None,groups=fleet.lockstep.dev,resources=federatedworkloads,verbs=create;update,versions=v1alpha1,name=vfederatedworkload.fleet.lockstep.dev,admissionReviewVersions=v1

// Setup registers the fleet's validating webhooks with the manager's webhook
// server. fleetNamespace is the only namespace a MemberCluster's kubeconfig
// Secret may be in (the hub's --fleet-namespace).
func Setup(mgr ctrl.Manager, fleetNamespace string) error {
	if fleetNamespace == "" {
		return fmt.Errorf("registering MemberCluster webhook: no fleet namespace given")
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.MemberCluster{}).
		WithValidator(MemberClusterValidator{FleetNamespace: fleetNamespace}).
		Complete(); err != nil {
		return fmt.Errorf("registering MemberCluster webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.Placement{}).
		WithValidator(PlacementValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering Placement webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.FederatedWorkload{}).
		WithValidator(FederatedWorkloadValidator{}).
		Complete(); err != nil {
		return fmt.Errorf("registering FederatedWorkload webhook: %w", err)
	}
	return nil
}

// FederatedWorkloadValidator rejects FederatedWorkloads the hub could not
// steer: unsupported kinds, templates that set the hub's rollout fields, and
// budgets that cannot move.
type FederatedWorkloadValidator struct{}

// ValidateCreate implements admission.Validator.
func (FederatedWorkloadValidator) ValidateCreate(_ context.Context, fw *fleetv1alpha1.FederatedWorkload) (admission.Warnings, error) {
	return nil, invalid("FederatedWorkload", fw.Name, ValidateFederatedWorkload(fw))
}

// ValidateUpdate implements admission.Validator.
func (FederatedWorkloadValidator) ValidateUpdate(_ context.Context, old, fw *fleetv1alpha1.FederatedWorkload) (admission.Warnings, error) {
	return nil, invalid("FederatedWorkload", fw.Name, ValidateFederatedWorkloadUpdate(old, fw))
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (FederatedWorkloadValidator) ValidateDelete(context.Context, *fleetv1alpha1.FederatedWorkload) (admission.Warnings, error) {
	return nil, nil
}

// MemberClusterValidator rejects MemberClusters whose Secret reference is
// unusable or outside the fleet namespace.
type MemberClusterValidator struct {
	// FleetNamespace is the only namespace a kubeconfig Secret may be in.
	FleetNamespace string
}

// ValidateCreate implements admission.Validator.
func (v MemberClusterValidator) ValidateCreate(_ context.Context, mc *fleetv1alpha1.MemberCluster) (admission.Warnings, error) {
	return nil, invalid("MemberCluster", mc.Name, ValidateMemberCluster(mc, v.FleetNamespace))
}

// ValidateUpdate implements admission.Validator.
func (v MemberClusterValidator) ValidateUpdate(_ context.Context, _, mc *fleetv1alpha1.MemberCluster) (admission.Warnings, error) {
	return nil, invalid("MemberCluster", mc.Name, ValidateMemberCluster(mc, v.FleetNamespace))
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (MemberClusterValidator) ValidateDelete(context.Context, *fleetv1alpha1.MemberCluster) (admission.Warnings, error) {
	return nil, nil
}

// PlacementValidator rejects Placements the decision planner could not lay out.
type PlacementValidator struct{}

// ValidateCreate implements admission.Validator.
func (PlacementValidator) ValidateCreate(_ context.Context, pl *fleetv1alpha1.Placement) (admission.Warnings, error) {
	return nil, invalid("Placement", pl.Name, ValidatePlacement(pl))
}

// ValidateUpdate implements admission.Validator.
func (PlacementValidator) ValidateUpdate(_ context.Context, _, pl *fleetv1alpha1.Placement) (admission.Warnings, error) {
	return nil, invalid("Placement", pl.Name, ValidatePlacement(pl))
}

// ValidateDelete implements admission.Validator; deletes are always allowed.
func (PlacementValidator) ValidateDelete(context.Context, *fleetv1alpha1.Placement) (admission.Warnings, error) {
	return nil, nil
}

func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(fleetv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
