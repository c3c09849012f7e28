#!/usr/bin/env bash
# Run kwokctl against the dev cluster, e.g. `hack/dev/kwokctl.sh logs kube-scheduler`
# or `hack/dev/kwokctl.sh get components -o wide`.
# Environment: BIN, DEV, LOCKSTEP_CLUSTER (see lib.sh).
set -euo pipefail

# shellcheck source=hack/dev/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_bins kwokctl kubectl
kwokctl "$@"
