#!/usr/bin/env bash
# hack/dev/nodes.sh COUNT: make the dev cluster have exactly COUNT simulated GPU
# nodes, gpu-node-0 .. gpu-node-<COUNT-1>, and wait until they are Ready.
# Missing nodes are created, nodes beyond COUNT are deleted (their pods are
# then garbage-collected), existing ones are left alone. Other nodes are never
# touched.
#
# Environment (defaults in brackets): BIN, DEV, LOCKSTEP_CLUSTER (see lib.sh),
#   GPUS_PER_NODE [8], NODE_CPU [256], NODE_MEMORY [2Ti], NODE_PODS [1000]
# Node sizes apply to nodes created by this run.
set -euo pipefail

# shellcheck source=hack/dev/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

count="${1:-}"
[[ "$count" =~ ^[0-9]+$ ]] || die "usage: $0 COUNT"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
NODE_CPU="${NODE_CPU:-256}"
NODE_MEMORY="${NODE_MEMORY:-2Ti}"
NODE_PODS="${NODE_PODS:-1000}"
NODE_LABEL="lockstep.dev/dev-node"

require_bins kubectl
[[ -f "$KUBECONFIG_PATH" ]] || die "no kubeconfig at $KUBECONFIG_PATH: run hack/dev/up.sh first"

# Status is part of the Node on create, which is how capacity (and the GPUs)
# get there: kwok's node stages keep what the Node was created with. The
# annotation is what makes kwok-controller manage the node.
node_manifest() {
	cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    $NODE_LABEL: "true"
    type: kwok
    kubernetes.io/hostname: $1
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.present: "true"
status:
  capacity: &resources
    cpu: "$NODE_CPU"
    memory: $NODE_MEMORY
    pods: "$NODE_PODS"
    nvidia.com/gpu: "$GPUS_PER_NODE"
  allocatable: *resources
---
EOF
}

mapfile -t existing < <(kctl get nodes -l "$NODE_LABEL=true" -o name)
declare -A have=()
for n in "${existing[@]}"; do have["${n#node/}"]=1; done

want=()
manifest=""
for ((i = 0; i < count; i++)); do
	name="gpu-node-$i"
	want+=("node/$name")
	[[ -n "${have[$name]:-}" ]] && continue
	manifest+="$(node_manifest "$name")"$'\n'
done

extra=()
for n in "${existing[@]}"; do
	[[ " ${want[*]} " == *" $n "* ]] || extra+=("$n")
done

if [[ -n "$manifest" ]]; then
	log "creating $(grep -c '^kind: Node' <<<"$manifest") node(s) with $GPUS_PER_NODE nvidia.com/gpu each"
	kctl create -f - <<<"$manifest" >/dev/null
fi
if ((${#extra[@]} > 0)); then
	log "deleting ${#extra[@]} node(s) beyond $count: ${extra[*]#node/}"
	kctl delete --wait=false "${extra[@]}" >/dev/null
fi

if ((count > 0)); then
	log "waiting for $count node(s) to be Ready"
	kctl wait --for=condition=Ready --timeout=120s "${want[@]}" >/dev/null ||
		die "nodes did not become Ready (kwok-controller log: $CLUSTER_WORKDIR/logs/kwok-controller.log)"
fi
log "$count GPU node(s) ready"
