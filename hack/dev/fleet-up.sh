#!/usr/bin/env bash
# Start a local fleet: a hub cluster and MEMBERS member clusters (kwokctl,
# binary runtime, each with its own ports), and register every member on the
# hub. Writes $FLEET_DIR/hub.kubeconfig and $FLEET_DIR/m<i>.kubeconfig.
#
#   hub      kube-apiserver, etcd and kube-controller-manager only: it holds the
#            fleet objects and runs no pods. The fleet CRDs are installed here.
#   members  like `make dev-up` (scheduler with gang scheduling, kwok nodes),
#            with MEMBER_NODES nodes. Lockstep's workload CRDs are installed.
#
# Each member is registered as a Secret $FLEET_NAMESPACE/m<i> (key kubeconfig:
# a token of the member's ServiceAccount lockstep-system/lockstep-hub, which
# may do only what the hub needs there) and a MemberCluster m<i> labelled region (eu for odd i, us for even) and gpu
# (true for m1, m2, m5, m6, ...; false for m3, m4, ...).
#
# The MemberClusterSet "default" selects every member and is bound to the hub
# namespaces default and $FLEET_NAMESPACE: Placements elsewhere select nothing
# until a set is bound to their namespace.
#
# Safe to re-run: healthy clusters are kept, registrations are re-applied, and
# members beyond MEMBERS (from an earlier, larger run) are deleted with their
# registrations.
#
# Environment (defaults in brackets): BIN, FLEET_DIR, FLEET_NAME (see fleet-lib.sh),
#   MEMBERS               member clusters                         [3]
#   MEMBER_NODES          simulated GPU nodes per member           [2]
#   MEMBER_KWOKCTL_ARGS   extra `kwokctl create cluster` words for members, e.g.
#                         "--disable kube-scheduler,kwok-controller" for members
#                         that only need an apiserver                 []
#   REGISTER              register the members on the hub (0: don't)  [1]
set -euo pipefail

# shellcheck source=hack/dev/fleet-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fleet-lib.sh"

MEMBERS="${MEMBERS:-3}"
MEMBER_NODES="${MEMBER_NODES:-2}"
MEMBER_KWOKCTL_ARGS="${MEMBER_KWOKCTL_ARGS:-}"
REGISTER="${REGISTER:-1}"
[[ "$MEMBERS" =~ ^[0-9]+$ ]] || fdie "MEMBERS must be a number, got '$MEMBERS'"
[[ "$MEMBER_NODES" =~ ^[0-9]+$ ]] || fdie "MEMBER_NODES must be a number, got '$MEMBER_NODES'"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl; do
	[[ -x "$BIN/$b" ]] || fdie "missing $BIN/$b (run 'make tools')"
done

start=$SECONDS

# up_cluster SHORT NODES KWOKCTL_ARGS: start (or keep) one cluster and copy its
# kubeconfig to $FLEET_DIR/SHORT.kubeconfig.
up_cluster() {
	local short=$1 nodes=$2 args=$3
	NODES="$nodes" KWOKCTL_CREATE_ARGS="$args" in_cluster "$short" up.sh
	cp "$(cluster_dev "$short")/kubeconfig" "$FLEET_DIR/$short.kubeconfig.tmp"
	mv "$FLEET_DIR/$short.kubeconfig.tmp" "$FLEET_DIR/$short.kubeconfig"
}

# region_of I and gpu_of I: the labels of member m<I>.
region_of() { if (($1 % 2 == 1)); then echo eu; else echo us; fi; }
gpu_of() { if ((($1 + 1) / 2 % 2 == 1)); then echo true; else echo false; fi; }

# hub_identity SHORT: give the hub a least-privilege identity in member SHORT
# (the ServiceAccount lockstep-system/lockstep-hub bound to the generated
# member role) and write $FLEET_DIR/SHORT.hub.kubeconfig with its token and the
# member's CA as data: the hub refuses kubeconfigs that name files.
hub_identity() {
	local short=$1 kc="$FLEET_DIR/$1.kubeconfig" out="$FLEET_DIR/$1.hub.kubeconfig"
	mctl() { "$BIN/kubectl" --kubeconfig "$kc" "$@"; }
	mctl create namespace lockstep-system --dry-run=client -o yaml | mctl apply -f - >/dev/null
	mctl -n lockstep-system create serviceaccount lockstep-hub --dry-run=client -o yaml | mctl apply -f - >/dev/null
	sed 's/^  name: hub-member$/  name: lockstep-hub-member/' "$FLEET_REPO_ROOT/config/fleet/member-rbac/role.yaml" | mctl apply -f - >/dev/null
	mctl create clusterrolebinding lockstep-hub-member --clusterrole=lockstep-hub-member \
		--serviceaccount=lockstep-system:lockstep-hub --dry-run=client -o yaml | mctl apply -f - >/dev/null
	local server ca token
	server=$(mctl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
	ca=$(mctl config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
	token=$(mctl -n lockstep-system create token lockstep-hub --duration=8760h)
	cat >"$out.tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: $short
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: lockstep-hub
  user:
    token: $token
contexts:
- name: $short
  context: {cluster: $short, user: lockstep-hub}
current-context: $short
KUBECONFIG
	mv "$out.tmp" "$out"
}

register_member() {
	local i=$1 short="m$1"
	hub_identity "$short"
	hubctl -n "$FLEET_NAMESPACE" create secret generic "$short" \
		--from-file=kubeconfig="$FLEET_DIR/$short.hub.kubeconfig" \
		--dry-run=client -o yaml | hubctl apply -f - >/dev/null
	hubctl apply -f - >/dev/null <<EOF
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberCluster
metadata:
  name: $short
  labels:
    region: $(region_of "$i")
    gpu: "$(gpu_of "$i")"
spec:
  kubeconfigSecretRef:
    namespace: $FLEET_NAMESPACE
    name: $short
    key: kubeconfig
EOF
	flog "registered $short (region=$(region_of "$i"), gpu=$(gpu_of "$i"))"
}

install_crds() {
	local kubeconfig=$1 dir=$2
	"$BIN/kubectl" --kubeconfig "$kubeconfig" apply --server-side --force-conflicts -f "$dir" >/dev/null
	"$BIN/kubectl" --kubeconfig "$kubeconfig" wait --for=condition=Established --timeout=60s -f "$dir" >/dev/null
}

# Members beyond MEMBERS go first, so that a smaller fleet frees their memory
# before anything new starts.
for short in $(members_present); do
	((${short#m} > MEMBERS)) || continue
	flog "$short is beyond MEMBERS=$MEMBERS: deleting it"
	if [[ -f "$HUB_KUBECONFIG" ]] && hubctl get --raw /readyz >/dev/null 2>&1; then
		hubctl delete membercluster "$short" --ignore-not-found >/dev/null 2>&1 || true
		hubctl -n "$FLEET_NAMESPACE" delete secret "$short" --ignore-not-found >/dev/null
	fi
	in_cluster "$short" down.sh
	rm -rf "$(cluster_dev "$short")" "$FLEET_DIR/$short.kubeconfig" "$FLEET_DIR/$short.hub.kubeconfig"
done

flog "hub: $(cluster_name hub) (no kube-scheduler, no kwok-controller)"
up_cluster hub 0 "--disable kube-scheduler,kwok-controller"
flog "installing the fleet CRDs on the hub"
install_crds "$HUB_KUBECONFIG" "$FLEET_REPO_ROOT/config/fleet/crd/bases"
hubctl create namespace "$FLEET_NAMESPACE" --dry-run=client -o yaml | hubctl apply -f - >/dev/null
# A Placement sees only the clusters of the MemberClusterSets bound to its
# namespace: the set "default" holds every member and is bound to the
# namespaces a developer starts in.
flog "cluster set default (every member) bound to namespaces default and $FLEET_NAMESPACE"
hubctl apply -f - >/dev/null <<EOF
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSet
metadata:
  name: default
spec:
  clusterSelector: {}
---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSetBinding
metadata:
  name: default
  namespace: default
spec:
  clusterSet: default
---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSetBinding
metadata:
  name: default
  namespace: $FLEET_NAMESPACE
spec:
  clusterSet: default
EOF

for ((i = 1; i <= MEMBERS; i++)); do
	flog "member m$i: $(cluster_name "m$i") ($MEMBER_NODES node(s))"
	up_cluster "m$i" "$MEMBER_NODES" "$MEMBER_KWOKCTL_ARGS"
	flog "installing Lockstep's workload CRDs in m$i"
	install_crds "$FLEET_DIR/m$i.kubeconfig" "$FLEET_REPO_ROOT/config/crd/bases"
	if [[ "$REGISTER" == 1 ]]; then
		register_member "$i"
	fi
done

flog "fleet ready in $((SECONDS - start))s: hub and $MEMBERS member(s)"
flog "  hub:     export KUBECONFIG=$HUB_KUBECONFIG"
for ((i = 1; i <= MEMBERS; i++)); do
	flog "  m$i:      $FLEET_DIR/m$i.kubeconfig"
done
flog "  run the hub from source: make fleet-run"
