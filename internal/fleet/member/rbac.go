package member

// What the hub does in a member cluster, and so all a member's kubeconfig for
// the hub needs to allow: `make generate` writes these rules to
// config/fleet/member-rbac/role.yaml, which the chart installs (member.enabled)
// and `make fleet-up` binds to the hub's ServiceAccount in each member.
//
// The probe reads /readyz, the version and discovery.
// +kubebuilder:rbac:urls=/readyz;/version;/api;/api/*;/apis;/apis/*,verbs=get
// Member objects live in the FederatedWorkload's namespace, created if missing.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=lockstep.dev,resources=podcliquesets,verbs=get;list;watch;create;update;patch;delete
// A Deployment member's ReplicaSets say how far its rollout has gone; each
// round reads them. The hub watches only the member objects (the Deployment
// controller writes a Deployment's status after each change of its
// ReplicaSets' counts), not every ReplicaSet of the member.
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list
