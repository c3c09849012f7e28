// Package controller holds the operator's reconcilers, one sub-package per
// kind (podcliqueset, podcliquescalinggroup, podclique), and Setup, which
// builds them. What they share lives a floor below, in internal/controlloop
// and internal/observe. The RBAC markers below are everything the operator
// binary needs; `make generate` turns them into config/rbac/role.yaml.
package controller

// Lockstep's own kinds.
// +kubebuilder:rbac:groups=lockstep.dev,resources=podcliquesets;podcliquescalinggroups;podcliques,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=lockstep.dev,resources=podcliquesets/status;podcliquescalinggroups/status;podcliques/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=lockstep.dev,resources=podcliquesets/finalizers;podcliquescalinggroups/finalizers;podcliques/finalizers,verbs=update

// What the operator creates for a PodCliqueSet: pods, headless Services,
// revisions, gangs, and the Events that narrate a rollout.
// +kubebuilder:rbac:groups="",resources=pods;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;list;watch;create;update;patch;delete

// Webhook certificates (the rotator) and leader election, in the operator's
// own namespace only (the chart puts these rules in a Role of the release
// namespace): the rotator's cache lists Secrets there and it rewrites its own
// Secret, which the chart creates. Webhook configurations are cluster-scoped:
// read all (the rotator's cache watches them), write only Lockstep's own.
// +kubebuilder:rbac:groups="",namespace=lockstep-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=lockstep-system,resources=secrets,resourceNames=lockstep-webhook-server-cert,verbs=update;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=lockstep-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=lockstep-mutating-webhook-configuration,verbs=update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=lockstep-validating-webhook-configuration,verbs=update;patch
