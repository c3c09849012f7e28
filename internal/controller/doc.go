// Package controller holds Lockstep's reconcilers, one sub-package per kind
// (podcliqueset, podcliquescalinggroup, podclique). The RBAC markers below are
// everything the operator binary needs; `make generate` turns them into
// config/rbac/role.yaml.
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

// Webhook certificates (the rotator) and leader election.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
