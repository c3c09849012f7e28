# shellcheck shell=bash disable=SC2034 # variables are used by the scripts sourcing this
# Shared settings of hack/dev/fleet-*.sh. Sourced, not run.
#
# A local fleet is one hub and MEMBERS member clusters, each a kwokctl cluster
# made by hack/dev/up.sh with a state directory of its own under $FLEET_DIR.
#
# Inputs (environment):
#   BIN         directory with the pinned binaries       (default: <repo>/bin)
#   FLEET_DIR   state and kubeconfigs of the fleet        (default: <repo>/.dev/fleet)
#   FLEET_NAME  prefix of the kwokctl cluster names       (default: lockstep)
#               the hub is <FLEET_NAME>-hub, members <FLEET_NAME>-m1, -m2, ...

FLEET_SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FLEET_REPO_ROOT="$(cd "$FLEET_SCRIPTS_DIR/../.." && pwd)"

BIN="${BIN:-$FLEET_REPO_ROOT/bin}"
[[ -d "$BIN" ]] && BIN="$(cd "$BIN" && pwd)"
FLEET_DIR="${FLEET_DIR:-$FLEET_REPO_ROOT/.dev/fleet}"
mkdir -p "$FLEET_DIR"
FLEET_DIR="$(cd "$FLEET_DIR" && pwd)"
FLEET_NAME="${FLEET_NAME:-lockstep}"
export BIN

# The namespace on the hub that holds the members' kubeconfig Secrets.
FLEET_NAMESPACE="lockstep-fleet"
HUB_KUBECONFIG="$FLEET_DIR/hub.kubeconfig"
export PATH="$BIN:$PATH"
export KUBECACHEDIR="$FLEET_DIR/kube-cache"

flog() { printf '>> [fleet %s] %s\n' "$FLEET_NAME" "$*" >&2; }
fdie() { printf 'error: [fleet %s] %s\n' "$FLEET_NAME" "$*" >&2; exit 1; }

# Each cluster of the fleet is hack/dev/up.sh's cluster with DEV and name of
# its own: short names are "hub", "m1", "m2", ...
cluster_name() { echo "$FLEET_NAME-$1"; }
cluster_dev() { echo "$FLEET_DIR/$1"; }

# in_cluster SHORT SCRIPT [ARGS...] runs a hack/dev script for one fleet cluster.
in_cluster() {
	local short=$1 script=$2
	shift 2
	DEV="$(cluster_dev "$short")" LOCKSTEP_CLUSTER="$(cluster_name "$short")" \
		"$FLEET_SCRIPTS_DIR/$script" "$@"
}

hubctl() { "$BIN/kubectl" --kubeconfig "$HUB_KUBECONFIG" "$@"; }

# members_present lists the short names of the members that have state under
# $FLEET_DIR, in numeric order.
members_present() {
	local d
	for d in "$FLEET_DIR"/m*/; do
		[[ -d "$d" ]] || continue
		d="${d%/}"
		d="${d##*/}"
		[[ "$d" =~ ^m[0-9]+$ ]] && echo "$d"
	done | sort -t m -k 2 -n
}
