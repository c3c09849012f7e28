#!/usr/bin/env bash
# Delete the local fleet made by fleet-up.sh: every member, the hub and their
# state under $FLEET_DIR. Harmless when (part of) it is already gone.
# Environment: BIN, FLEET_DIR, FLEET_NAME (see fleet-lib.sh).
set -euo pipefail

# shellcheck source=hack/dev/fleet-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fleet-lib.sh"

[[ -x "$BIN/kwokctl" ]] || fdie "missing $BIN/kwokctl (run 'make tools')"

for short in $(members_present) hub; do
	[[ -d "$(cluster_dev "$short")" ]] || continue
	in_cluster "$short" down.sh
	rm -rf "$(cluster_dev "$short")" "$FLEET_DIR/$short.kubeconfig" "$FLEET_DIR/$short.hub.kubeconfig"
done
# The webhook certificates `make fleet-run` and `make fleet-run-operator` write.
rm -rf "$FLEET_DIR/kube-cache" "$FLEET_DIR"/*-webhook-certs
# Only what this script knows is removed; the directory goes if that emptied it.
rmdir "$FLEET_DIR" 2>/dev/null || true
flog "fleet deleted"
