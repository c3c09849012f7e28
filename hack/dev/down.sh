#!/usr/bin/env bash
# Delete the local cluster and its state under $DEV. Harmless when it is absent.
# Environment: BIN, DEV, LOCKSTEP_CLUSTER (see lib.sh).
set -euo pipefail

# shellcheck source=hack/dev/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_bins kwokctl

# $DEV/kubeconfig belongs to whichever cluster of this $DEV came up last:
# remove it only if that is this one. Decided before kwokctl edits it.
owns_kubeconfig=false
if grep -qx "current-context: kwok-$CLUSTER" "$KUBECONFIG_PATH" 2>/dev/null; then
	owns_kubeconfig=true
fi

# Last resort when kwokctl cannot delete the cluster: stop the processes it
# recorded for this cluster, and only while they still belong to it (their
# command line names the cluster's workdir).
kill_recorded_processes() {
	local pidfile pid cmdline
	for pidfile in "$CLUSTER_WORKDIR"/pids/*.pid; do
		[[ -f "$pidfile" ]] || continue
		pid="$(<"$pidfile")"
		cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
		if [[ "$cmdline" == *"$CLUSTER_WORKDIR/"* ]]; then
			kill "$pid" 2>/dev/null || true
		fi
	done
}

if cluster_exists; then
	log "deleting cluster"
	out="$(mktemp)"
	trap 'rm -f "$out"' EXIT
	# --kubeconfig: kwokctl drops the cluster's context there; by default it
	# would edit ~/.kube/config.
	if ! kwokctl delete cluster --kubeconfig "$KUBECONFIG_PATH" >"$out" 2>&1; then
		cat "$out" >&2
		log "kwokctl could not delete the cluster; stopping its processes"
		kill_recorded_processes
	fi
else
	log "no cluster to delete"
fi

rm -rf "$CLUSTER_WORKDIR" "$STATE_DIR"
if $owns_kubeconfig; then
	rm -f "$KUBECONFIG_PATH"
fi
