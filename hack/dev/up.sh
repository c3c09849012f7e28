#!/usr/bin/env bash
# Start the local Kubernetes 1.36 cluster (kwokctl, binary runtime) with native
# gang scheduling on, GPU nodes simulated by kwok, and write $DEV/kubeconfig.
# Safe to re-run: a healthy cluster with the same settings is kept and only its
# nodes are reconciled; a broken or differently configured one is recreated.
#
# Environment (defaults in brackets):
#   BIN, DEV, LOCKSTEP_CLUSTER  see lib.sh                     [bin, .dev, lockstep]
#   NODES          simulated GPU nodes                          [8]
#   GPUS_PER_NODE  nvidia.com/gpu capacity of each node         [8]
#   READY_DELAY    time from a pod being bound to it being Ready [2s]
#   READY_JITTER   extra random time, up to this much, on top of
#                  READY_DELAY; 0 makes the delay exact         [3s]
#   DELETE_DELAY   time a deleted pod takes to go away          [1s]
#   KWOKCTL_CREATE_ARGS  extra words for `kwokctl create cluster`
set -euo pipefail

# shellcheck source=hack/dev/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODES="${NODES:-8}"
READY_DELAY="${READY_DELAY:-2s}"
READY_JITTER="${READY_JITTER:-3s}"
DELETE_DELAY="${DELETE_DELAY:-1s}"
KWOKCTL_CREATE_ARGS="${KWOKCTL_CREATE_ARGS:-}"

# Workload/PodGroup (scheduling.k8s.io/v1alpha2) and the scheduler's gang
# plugin are alpha in 1.36; the gates go to apiserver, scheduler and KCM alike.
FEATURE_GATES="GenericWorkload=true,GangScheduling=true"
RUNTIME_CONFIG="scheduling.k8s.io/v1alpha2=true"

require_bins etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl
[[ "$NODES" =~ ^[0-9]+$ ]] || die "NODES must be a number, got '$NODES'"

start=$SECONDS
rendered="$(mktemp)"
trap 'rm -f "$rendered"' EXIT

# Render the kwok config. kwok's jitter is the upper bound of the random delay.
ready_ms="$(to_ms "$READY_DELAY")"
ready_max_ms=$((ready_ms + $(to_ms "$READY_JITTER")))
delete_ms="$(to_ms "$DELETE_DELAY")"
sed -e "s/@READY_DELAY_MS@/$ready_ms/g" \
	-e "s/@READY_MAX_MS@/$ready_max_ms/g" \
	-e "s/@DELETE_DELAY_MS@/$delete_ms/g" \
	"$DEV_SCRIPTS_DIR/kwok.yaml" >"$rendered"

create_args=(
	--runtime binary
	# The kubeconfig is written by this script; keep kwokctl off ~/.kube/config.
	--kubeconfig=
	--etcd-binary "$BIN/etcd"
	--kube-apiserver-binary "$BIN/kube-apiserver"
	--kube-controller-manager-binary "$BIN/kube-controller-manager"
	--kube-scheduler-binary "$BIN/kube-scheduler"
	--kwok-controller-binary "$BIN/kwok"
	--kube-feature-gates "$FEATURE_GATES"
	--kube-runtime-config "$RUNTIME_CONFIG"
	--timeout 180s
)
# shellcheck disable=SC2206 # word splitting of the extra args is intended
create_args+=($KWOKCTL_CREATE_ARGS)

# Everything that needs a new cluster when it changes: the stages, the flags
# and the binaries themselves (a rebuilt kube-apiserver, say).
fingerprint="$(
	{
		cat "$rendered"
		printf '%s\n' "${create_args[@]}"
		ls -lL --time-style=+%s "$BIN"/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kwok}
	} | sha256sum | cut -d' ' -f1
)"

write_kubeconfig() {
	kwokctl get kubeconfig >"$KUBECONFIG_PATH.tmp"
	mv "$KUBECONFIG_PATH.tmp" "$KUBECONFIG_PATH"
}

if cluster_exists; then
	if [[ "$(cat "$STATE_DIR/fingerprint" 2>/dev/null)" != "$fingerprint" ]]; then
		log "cluster exists with other settings (stages, flags or binaries): recreating it"
		"$DEV_SCRIPTS_DIR/down.sh"
	elif ! { write_kubeconfig && cluster_healthy; }; then
		# Keep the broken cluster's logs: down.sh deletes its workdir.
		rm -rf "$DEV/previous-logs/$CLUSTER"
		mkdir -p "$DEV/previous-logs"
		cp -r "$CLUSTER_WORKDIR/logs" "$DEV/previous-logs/$CLUSTER" 2>/dev/null || true
		log "cluster exists but is not healthy: recreating it (its logs: $DEV/previous-logs/$CLUSTER)"
		"$DEV_SCRIPTS_DIR/down.sh"
	else
		log "cluster is already up and healthy"
	fi
fi

if ! cluster_exists; then
	mkdir -p "$STATE_DIR"
	cp "$rendered" "$STATE_DIR/kwok.yaml"
	log "creating cluster (Kubernetes $("$BIN/kube-apiserver" --version | awk '{print $2}'), gates $FEATURE_GATES)"
	# kwokctl picks free ports and binds them later: two clusters created at
	# once can pick the same port. One machine-wide lock serialises creation.
	# -o: the components kwokctl leaves running must not inherit (and hold) the lock.
	if ! flock -o "${TMPDIR:-/tmp}/lockstep-kwokctl-create.lock" \
		"$BIN/kwokctl" --name "$CLUSTER" --config "$STATE_DIR/kwok.yaml" create cluster "${create_args[@]}" >"$STATE_DIR/create.log" 2>&1; then
		cat "$STATE_DIR/create.log" >&2
		die "kwokctl create cluster failed (component logs: $CLUSTER_WORKDIR/logs)"
	fi
	echo "$fingerprint" >"$STATE_DIR/fingerprint"
	write_kubeconfig
fi

log "waiting for the apiserver"
retry_until 120 "the apiserver to be ready" kctl get --raw /readyz
# kube-controller-manager gives up when the apiserver is slow to finish
# starting (a loaded machine), and kwokctl does not start it again: restart
# the components once if one of them is down.
if ! within 30 cluster_healthy; then
	log "a component exited while the apiserver was starting: restarting the components"
	kwokctl stop cluster >>"$STATE_DIR/create.log" 2>&1 || true
	kwokctl start cluster >>"$STATE_DIR/create.log" 2>&1 ||
		die "kwokctl start cluster failed (component logs: $CLUSTER_WORKDIR/logs)"
	retry_until 120 "the components to be Ready" cluster_healthy
fi
log "checking that scheduling.k8s.io/v1alpha2 is served"
kctl get --raw /apis/scheduling.k8s.io/v1alpha2 >/dev/null ||
	die "scheduling.k8s.io/v1alpha2 is not served: gang scheduling is off (see $CLUSTER_WORKDIR/logs/kube-apiserver.log)"
# Pods are rejected by ServiceAccount admission until KCM has made the
# namespace's default ServiceAccount.
log "waiting for the default ServiceAccount"
retry_until 120 "ServiceAccount default/default" kctl -n default get serviceaccount default

"$DEV_SCRIPTS_DIR/nodes.sh" "$NODES"

log "ready in $((SECONDS - start))s: $NODES node(s) with ${GPUS_PER_NODE:-8} nvidia.com/gpu each; pods turn Ready $READY_DELAY (+ up to $READY_JITTER) after binding"
log "  export KUBECONFIG=$KUBECONFIG_PATH"
log "  component logs: LOCKSTEP_CLUSTER=$CLUSTER DEV=$DEV hack/dev/kwokctl.sh logs kube-scheduler"
