#!/usr/bin/env bash
# A narrated tour of Lockstep on the local cluster: `make demo`.
#
# Starts the local cluster and the operator (in the background, logging to
# $DEMO_DIR/operator.log), applies the disaggregated example, then shows with
# `kubectl lockstep`: the plan of an update, the update live, role-ordered
# steps, a broken version that stalls and is undone, and the SVG timeline.
#
#   hack/demo.sh        run the demo (DEMO_AUTO=1: unattended, no pauses)
#   hack/demo.sh down   stop the demo's operator and delete its cluster
#
# Every step's exit status is asserted; the first surprise ends the demo with
# a non-zero status. Environment: BIN, DEV (see hack/dev/lib.sh),
# LOCKSTEP_CLUSTER [lockstep-demo], DEMO_AUTO [0].
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LOCKSTEP_CLUSTER="${LOCKSTEP_CLUSTER:-lockstep-demo}"
export BIN="${BIN:-$REPO/bin}"
# The demo's cluster state, kubeconfig and logs live apart from `make dev-up`'s.
export DEV="${DEV:-$REPO/.dev}/demo"
DEMO_AUTO="${DEMO_AUTO:-0}"
mkdir -p "$DEV"
export KUBECONFIG="$DEV/kubeconfig"
OPERATOR_PID="$DEV/operator.pid"
CAPTURES="$DEV/captures"
LOCKSTEP="$BIN/lockstep"

bold=$'\e[1m' dim=$'\e[2m' reset=$'\e[0m'
if [[ ! -t 1 ]]; then bold="" dim="" reset=""; fi

# The narration goes to fd 3 (the terminal), so that a step's output can be
# redirected to a file without it.
exec 3>&1
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$reset" >&3; }
note() { printf '%s%s%s\n' "$dim" "$*" "$reset" >&3; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }
pause() {
	[[ "$DEMO_AUTO" == 1 || ! -t 0 ]] && return
	read -r -p "${dim}(enter to go on)${reset} " _
}

# expect CODE CMD...: run CMD, show it, and stop the demo unless it exits CODE.
expect() {
	local want=$1 rc=0
	shift
	printf '%s$ %s%s\n' "$dim" "${*/#$BIN\//}" "$reset" >&3
	"$@" || rc=$?
	[[ $rc == "$want" ]] || die "'$*' exited $rc, expected $want"
	note "(exit $rc, as expected)"
}

stop_operator() {
	[[ -f "$OPERATOR_PID" ]] || return 0
	local pid
	pid="$(<"$OPERATOR_PID")"
	# Only the process this script started: its command line is our binary's.
	if [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == "$LOCKSTEP operator"* ]]; then
		kill "$pid"
		local deadline=$((SECONDS + 20))
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
	fi
	rm -f "$OPERATOR_PID"
}

if [[ "${1:-}" == down ]]; then
	stop_operator
	"$REPO/hack/dev/down.sh"
	rm -rf "$DEV"
	exit 0
fi

kctl() { "$BIN/kubectl" "$@"; }

# until_ok and free_port.
# shellcheck source=hack/demo-lib.sh
source "$REPO/hack/demo-lib.sh"

# watch_live NAME CAPTURE: `get -w` until the rollout is over; on a terminal it
# redraws in place, unattended it keeps every frame in CAPTURE and shows the last.
watch_live() {
	local name=$1 capture=$2
	if [[ -t 1 && "$DEMO_AUTO" != 1 ]]; then
		expect 0 "$LOCKSTEP" get pcs "$name" -w --until-done --timeout 5m
		"$LOCKSTEP" get pcs "$name" -w --until-done --timeout 5m --no-color >"$capture" || true
	else
		expect 0 "$LOCKSTEP" get pcs "$name" -w --until-done --timeout 5m --no-color >"$capture"
		note "$(grep -c '^--- ' "$capture") redraws kept in ${capture#"$REPO"/}; the last:"
		awk '/^--- /{buf=""; next} {buf = buf $0 "\n"} END {printf "%s", buf}' "$capture"
	fi
}

# done_get NAME CAPTURE: `get` right after `status` said the rollout is done.
# Every object below the PodCliqueSet says so too by then: a ◐ (some ready, or
# ready ones still to come) ends the demo.
done_get() {
	local name=$1 capture=$2
	expect 0 "$LOCKSTEP" get pcs "$name" --no-color >"$capture"
	cat "$capture"
	if grep -q '◐' "$capture"; then
		die "$name: get draws ◐ right after status said the rollout is complete (${capture#"$REPO"/})"
	fi
}

start=$SECONDS
mkdir -p "$CAPTURES"
v2="$DEV/disaggregated-v2.yaml" pd2="$DEV/role-ordered-pd-v2.yaml"
sed 's/:v1/:v2/' "$REPO/examples/disaggregated.yaml" >"$v2"
sed 's/:v1/:v2/' "$REPO/examples/role-ordered-pd.yaml" >"$pd2"

say "A local Kubernetes 1.36 cluster: 8 simulated nodes of 8 GPUs, native gang scheduling"
READY_DELAY="${READY_DELAY:-2s}" READY_JITTER="${READY_JITTER:-1s}" "$REPO/hack/dev/up.sh"
kctl apply --server-side --force-conflicts -f "$REPO/config/crd/bases" >/dev/null

say "The operator, in the background (log: ${DEV#"$REPO"/}/operator.log)"
stop_operator
webhook_port="$(free_port)" probe_port="$(free_port)"
"$LOCKSTEP" operator --kubeconfig "$KUBECONFIG" --dev-webhooks --leader-elect=false \
	--webhook-port "$webhook_port" --webhook-cert-dir "$DEV/webhook-certs" \
	--metrics-bind-address 0 --health-probe-bind-address "127.0.0.1:$probe_port" >"$DEV/operator.log" 2>&1 &
echo $! >"$OPERATOR_PID"
until_ok 60 kctl apply --dry-run=server -f "$REPO/examples/disaggregated.yaml" ||
	die "the operator's webhooks did not answer within 60s (see $DEV/operator.log)"
note "operator pid $(<"$OPERATOR_PID"), admitting PodCliqueSets"

say "The disaggregated example: 2 replicas of a frontend and prefill/decode groups (leader + 2 workers), 30 pods"
expect 0 kctl apply -f "$REPO/examples/disaggregated.yaml"
expect 0 "$LOCKSTEP" status disagg --timeout 3m
done_get disagg "$CAPTURES/get-disagg-created.txt"
pause

say "Before touching the cluster: the plan of the update to v2, simulated offline"
expect 0 "$LOCKSTEP" plan -f "$REPO/examples/disaggregated.yaml" -f "$v2" >"$DEV/plan.txt"
sed -n '1,/^  *[0-9.]*s  /p' "$DEV/plan.txt" | head -n 20
note "... (the whole timeline: ${DEV#"$REPO"/}/plan.txt)"
tail -n 8 "$DEV/plan.txt"
pause

say "The update, live: one PodCliqueSet replica at a time, one unit per role at a time"
expect 0 kctl apply -f "$v2"
watch_live disagg "$CAPTURES/get-w-disagg.txt"
expect 0 "$LOCKSTEP" status disagg --timeout 2m
done_get disagg "$CAPTURES/get-disagg-v2.txt"
pause

say "Role steps: decode first, then one prefill, then all prefill, then all decode (examples/role-ordered-pd.yaml)"
expect 0 kctl apply -f "$REPO/examples/role-ordered-pd.yaml"
expect 0 "$LOCKSTEP" status pd-ordered --timeout 3m
done_get pd-ordered "$CAPTURES/get-pd-ordered-created.txt"
expect 0 kctl apply -f "$pd2"
watch_live pd-ordered "$CAPTURES/get-w-role-steps.txt"
expect 0 "$LOCKSTEP" status pd-ordered --timeout 2m
done_get pd-ordered "$CAPTURES/get-pd-ordered-v2.txt"
expect 0 kctl delete pcs pd-ordered --wait=false
pause

say "A broken version: v3 of the frontend never turns ready; the progress deadline is 20s"
expect 0 kctl patch pcs disagg --type json -p '[
  {"op": "replace", "path": "/spec/progressDeadlineSeconds", "value": 20},
  {"op": "replace", "path": "/spec/template/cliques/0/template/spec/containers/0/image", "value": "lockstep-examples/llm-frontend:v3-broken"},
  {"op": "add", "path": "/spec/template/cliques/0/template/metadata", "value": {"annotations": {"pod-ready.stage.kwok.x-k8s.io/delay": "1h"}}}]'
note "status follows it and exits 1 once the deadline passes:"
expect 1 "$LOCKSTEP" status disagg --timeout 3m
note "and get says why:"
expect 0 "$LOCKSTEP" get pcs disagg --no-color | tee "$CAPTURES/get-stalled.txt"
pause

say "Undo: back to the previous revision, under the same strategy"
expect 0 "$LOCKSTEP" history disagg
expect 0 "$LOCKSTEP" undo disagg
expect 0 "$LOCKSTEP" status disagg --timeout 3m
done_get disagg "$CAPTURES/get-disagg-undone.txt"
expect 0 "$LOCKSTEP" history disagg
pause

say "Summary"
svg="$DEV/disagg-v1-to-v2.svg"
expect 0 "$LOCKSTEP" plan -f "$REPO/examples/disaggregated.yaml" -f "$v2" --svg "$svg" >/dev/null
cat <<MSG
  The update to v2, role steps, a stalled version caught by its deadline
  (status exit 1) and its undo: every step exited as expected.
  Timeline of the v1 -> v2 rollout as planned: ${svg#"$REPO"/}
  get -w captures: ${CAPTURES#"$REPO"/}/
  The cluster and operator keep running:
    export KUBECONFIG=$KUBECONFIG PATH=$BIN:\$PATH
    kubectl lockstep get pcs disagg --pods
  make demo-down removes them.
  Demo wall time: $((SECONDS - start))s
MSG
