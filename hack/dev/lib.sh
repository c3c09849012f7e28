# shellcheck shell=bash disable=SC2034 # variables are used by the scripts sourcing this
# Shared settings and helpers for hack/dev/*.sh. Sourced, not run.
#
# Inputs (environment):
#   BIN               directory with the pinned binaries (default: <repo>/bin)
#   DEV               directory for local cluster state (default: <repo>/.dev)
#   LOCKSTEP_CLUSTER  kwokctl cluster name (default: lockstep)

DEV_SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$DEV_SCRIPTS_DIR/../.." && pwd)"

BIN="${BIN:-$REPO_ROOT/bin}"
DEV="${DEV:-$REPO_ROOT/.dev}"
# Absolute paths: kwokctl records them in the cluster's config.
mkdir -p "$DEV"
DEV="$(cd "$DEV" && pwd)"
[[ -d "$BIN" ]] && BIN="$(cd "$BIN" && pwd)"
CLUSTER="${LOCKSTEP_CLUSTER:-lockstep}"

# kwokctl keeps each cluster (config, pki, etcd data, logs, pids) under
# $KWOK_WORKDIR/clusters/<name>; pointing it at $DEV keeps ~/.kwok untouched.
export KWOK_WORKDIR="$DEV/kwok"
CLUSTER_WORKDIR="$KWOK_WORKDIR/clusters/$CLUSTER"
# What up.sh renders and remembers about the cluster it created.
STATE_DIR="$DEV/state/$CLUSTER"
KUBECONFIG_PATH="$DEV/kubeconfig"

# kwokctl runs `kubectl` from PATH (and would try to download one otherwise).
export PATH="$BIN:$PATH"
# kubectl's discovery cache, also for kwokctl's own calls, instead of ~/.kube.
export KUBECACHEDIR="$DEV/kube-cache"

log() { printf '>> [%s] %s\n' "$CLUSTER" "$*" >&2; }
die() { printf 'error: [%s] %s\n' "$CLUSTER" "$*" >&2; exit 1; }

kwokctl() { "$BIN/kwokctl" --name "$CLUSTER" "$@"; }
kctl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

require_bins() {
	local b missing=()
	for b in "$@"; do
		[[ -x "$BIN/$b" ]] || missing+=("$b")
	done
	((${#missing[@]} == 0)) || die "missing in $BIN: ${missing[*]} (run 'make tools')"
}

# to_ms DURATION prints a Go-style duration (500ms, 2s, 1.5s, 1m; a bare number
# means seconds) as whole milliseconds.
to_ms() {
	[[ "$1" =~ ^([0-9]+(\.[0-9]+)?)(ms|s|m)?$ ]] || die "not a duration: '$1' (use e.g. 500ms, 2s, 1m)"
	awk -v n="${BASH_REMATCH[1]}" -v unit="${BASH_REMATCH[3]:-s}" 'BEGIN {
		f = (unit == "ms") ? 1 : (unit == "s") ? 1000 : 60000
		printf "%d\n", n * f + 0.5
	}'
}

# retry_until SECONDS DESCRIPTION CMD... runs CMD every half second until it
# succeeds; dies with DESCRIPTION when SECONDS pass.
retry_until() {
	local timeout=$1 what=$2
	shift 2
	within "$timeout" "$@" || die "timed out after ${timeout}s waiting for $what"
}

# within <seconds> <command...>: whether the command succeeds before the time is up.
within() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
}

# cluster_exists: kwokctl has state for this cluster.
cluster_exists() { [[ -f "$CLUSTER_WORKDIR/kwok.yaml" ]]; }

# cluster_healthy: every component reports Ready and the apiserver answers.
cluster_healthy() {
	local out
	out="$(kwokctl get components -o wide 2>/dev/null)" || return 1
	# Header plus at least one component, all of them Ready.
	awk 'NR > 1 { n++; if ($2 != "Ready") bad = 1 } END { exit (n > 0 && !bad) ? 0 : 1 }' <<<"$out" || return 1
	[[ -f "$KUBECONFIG_PATH" ]] && kctl get --raw /readyz >/dev/null 2>&1
}
