#!/usr/bin/env bash
# A narrated tour of a Lockstep fleet: `make demo-fleet`.
#
# Starts a hub and three member clusters of its own (hack/dev/fleet-up.sh,
# kwokctl names lockstep-demo-fleet-*, state in .dev/demo-fleet/), then
# `lockstep hub` and one `lockstep operator` per member in the background
# (logs: .dev/demo-fleet/hub.log, m<i>-operator.log), and shows:
#
#   1. a Placement choosing members by label (gpu=true: m1 and m2, not m3) and
#      examples/fleet/web.yaml, a Deployment of 10 pods split 4/6 over them,
#   2. its rollout to a new image under one fleet-wide budget (maxUnavailable 2,
#      maxSurge 1), recorded by `kubectl lockstep get fw/web -w`, while the
#      pods of both members are counted independently,
#   3. member m1 unreachable mid-rollout (its kube-apiserver frozen with
#      SIGSTOP): the hub keeps its share and charges its last grant, and m2
#      gets none of it; then m1 back (SIGCONT), the rollout done and
#      `kubectl lockstep status fw/web` exiting 0,
#   4. a PodCliqueSet placed by another label (region=eu: m1 and m3), rolled
#      by the members' operators one replica at a time for the whole fleet.
#
#   hack/demo-fleet.sh        run the demo (DEMO_AUTO=1: unattended, no pauses)
#   hack/demo-fleet.sh down   stop a kept demo's processes, delete its fleet and files
#
# Every step's exit status is asserted, and so is the budget as counted from
# the pods; the first surprise ends the demo with a non-zero status. On exit
# the demo stops what it started and deletes its clusters; its logs and
# captures stay in .dev/demo-fleet/. DEMO_KEEP=1 leaves the fleet, the hub and
# the operators running instead (`make demo-fleet-down` removes them). What an
# earlier run left is deleted first: every run starts from nothing.
#
# Environment (defaults in brackets): BIN [bin], DEV [.dev], DEMO_AUTO [0],
#   DEMO_KEEP [0], FLEET_DIR [$DEV/demo-fleet], FLEET_NAME [lockstep-demo-fleet].
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BIN="${BIN:-$REPO/bin}"
BIN="$(cd "$BIN" && pwd)"
# Apart from `make fleet-up` (.dev/fleet, lockstep-*), `make demo`
# (.dev/demo, lockstep-demo) and the e2e fleets (.dev/lockstep-e2e-*).
export FLEET_DIR="${FLEET_DIR:-${DEV:-$REPO/.dev}/demo-fleet}"
export FLEET_NAME="${FLEET_NAME:-lockstep-demo-fleet}"
mkdir -p "$FLEET_DIR"
FLEET_DIR="$(cd "$FLEET_DIR" && pwd)"
DEMO_AUTO="${DEMO_AUTO:-0}"
DEMO_KEEP="${DEMO_KEEP:-0}"
MEMBERS=3
export PATH="$BIN:$PATH"
export KUBECONFIG="$FLEET_DIR/hub.kubeconfig"
export KUBECACHEDIR="$FLEET_DIR/kube-cache"
CAPTURES="$FLEET_DIR/captures"
LOCKSTEP="$BIN/lockstep"

bold=$'\e[1m' dim=$'\e[2m' reset=$'\e[0m'
if [[ ! -t 1 ]]; then bold="" dim="" reset=""; fi

# The narration goes to fd 3 (the terminal), so that a step's output can be
# redirected to a file without it.
exec 3>&1
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$reset" >&3; }
note() { printf '%s%s%s\n' "$dim" "$*" "$reset" >&3; }
die() { printf 'demo-fleet: %s\n' "$*" >&2; exit 1; }
pause() {
	[[ "$DEMO_AUTO" == 1 || ! -t 0 ]] && return
	read -r -p "${dim}(enter to go on)${reset} " _ || true
}
# rel PATH: PATH relative to the repository, as the narration shows it.
rel() { echo "${1//$REPO\//}"; }

# expect CODE CMD...: run CMD, show it, and stop the demo unless it exits CODE.
expect() {
	local want=$1 rc=0 shown
	shift
	shown="$*"
	shown="${shown//$BIN\//}"
	printf '%s$ %s%s\n' "$dim" "$(rel "$shown")" "$reset" >&3
	"$@" || rc=$?
	[[ $rc == "$want" ]] || die "'$*' exited $rc, expected $want"
	note "(exit $rc, as expected)"
}

# until_ok and free_port.
# shellcheck source=hack/demo-lib.sh
source "$REPO/hack/demo-lib.sh"

# The hub, the operators and the `get -w` recorder run in the background,
# each with a pid file $FLEET_DIR/NAME.pid.
# start_bg NAME LOG CMD...: start CMD in the background, logging to LOG.
start_bg() {
	local name=$1 log=$2
	shift 2
	# No terminal and no narration fd: a kept process holds neither open.
	"$@" </dev/null >"$log" 2>&1 3>&- &
	echo $! >"$FLEET_DIR/$name.pid"
}

# stop_bg NAME: end the process of NAME.pid, only while it is still the one
# this script started (its command line is our binary's).
stop_bg() {
	local f="$FLEET_DIR/$1.pid" pid cmdline
	[[ -f "$f" ]] || return 0
	pid="$(<"$f")"
	cmdline="$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null)" || true
	if [[ "$cmdline" == "$LOCKSTEP "* ]]; then
		kill "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 20))
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

stop_all() {
	local f
	for f in "$FLEET_DIR"/*.pid; do
		[[ -f "$f" ]] || continue
		f="${f##*/}"
		stop_bg "${f%.pid}"
	done
}

# delete_fleet: stop the processes and delete the clusters with their
# kubeconfigs and certificates; the logs and captures stay.
delete_fleet() {
	stop_all
	"$REPO/hack/dev/fleet-down.sh"
	rm -rf "$FLEET_DIR"/m*.hub.kubeconfig "$FLEET_DIR"/*.yaml
}

# owned: FLEET_DIR is empty or was made by this script (its marker file):
# only then may a run or `down` delete what is in it.
owned() { [[ -f "$FLEET_DIR/.demo-fleet" ]] || ! compgen -G "$FLEET_DIR/*" >/dev/null; }
owned || die "$FLEET_DIR holds files this demo did not make; set FLEET_DIR to another directory"

if [[ "${1:-}" == down ]]; then
	delete_fleet
	rm -rf "$FLEET_DIR"
	exit 0
fi

SAMPLER_PID="" FROZEN_PID=""
# On exit: everything this run started goes, unless DEMO_KEEP=1. A failed
# run keeps the clusters' component logs.
cleanup() {
	local rc=$?
	set +e
	[[ -z "$SAMPLER_PID" ]] || kill "$SAMPLER_PID" 2>/dev/null
	[[ -z "$FROZEN_PID" ]] || kill -CONT "$FROZEN_PID" 2>/dev/null
	stop_bg recorder
	if [[ "$DEMO_KEEP" == 1 ]]; then
		((rc == 0)) || note "DEMO_KEEP=1: the fleet is left as it failed; make demo-fleet-down removes it"
		exit "$rc"
	fi
	if ((rc != 0)); then
		local d
		for d in "$FLEET_DIR"/hub "$FLEET_DIR"/m*; do
			[[ -d "$d/kwok/clusters/$FLEET_NAME-${d##*/}/logs" ]] || continue
			mkdir -p "$FLEET_DIR/cluster-logs"
			cp -r "$d/kwok/clusters/$FLEET_NAME-${d##*/}/logs" "$FLEET_DIR/cluster-logs/${d##*/}"
		done
		note "the demo failed (exit $rc); logs: $(rel "$FLEET_DIR")/hub.log, m*-operator.log, fleet-up.log, cluster-logs/"
	fi
	note "deleting the demo's fleet (DEMO_KEEP=1 would keep it)"
	delete_fleet >"$FLEET_DIR/fleet-down.log" 2>&1
	exit "$rc"
}

mctl() {
	local m=$1
	shift
	kubectl --kubeconfig "$FLEET_DIR/$m.kubeconfig" "$@"
}
# fw_field NAME JSONPATH: a field of FederatedWorkload default/NAME on the hub.
fw_field() { kubectl -n default get federatedworkload "$1" -o "jsonpath=$2"; }
progressing() { fw_field web '{.status.conditions[?(@.type=="Progressing")].message}'; }
# member_entry SHORT: web's share and grant of member SHORT, as the hub's status has them.
member_entry() {
	fw_field web "{.status.clusters[?(@.name==\"$1\")].desiredReplicas} {.status.clusters[?(@.name==\"$1\")].grant}"
}
# grant_of ENTRY FIELD: one field of the grant in a member_entry.
grant_of() { sed -n "s/.*\"$2\":\([a-z0-9]*\).*/\1/p" <<<"$1"; }
# last_frame CAPTURE: the last redraw of a `get -w` capture.
last_frame() { awk '/^--- /{buf=""; next} {buf = buf $0 "\n"} END {printf "%s", buf}' "$1"; }

# sample_pods IMAGE: every second, web's pods in m1 and m2 counted from the
# members themselves, not from the hub: available (Ready, not terminating),
# pods (not terminating; a ReplicaSet's counted up to its replicas, as
# test/fleetwatch does: the ones above are being deleted by the Deployment
# controller, which alone runs past its own maxSurge that way) and pods on
# IMAGE. A member that does not answer counts as last seen, marked '?'.
# m2 is read before m1: the rollout goes from m1 to m2, so the two reads,
# a moment apart, can only see less going on at once than there was, never more.
sample_pods() {
	local img=$1 m out a p u ta tp tu
	local -A last=() mark=()
	while :; do
		for m in m2 m1; do
			mark[$m]=""
			if out="$(mctl "$m" -n default get rs,pods -l app=web --request-timeout=2s -o jsonpath='{range .items[*]}{.kind}|{.metadata.name}|{.spec.replicas}|{.metadata.ownerReferences[0].name}|{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}|{.spec.containers[0].image}{"\n"}{end}' 2>/dev/null)"; then
				last[$m]="$(awk -F'|' -v img="$img" '
					$1 == "ReplicaSet" { want[$2] = $3 }
					$1 == "Pod" && $5 == "" { n[$4]++; if ($6 == "True") { av[$4]++; a++ } if ($7 == img) u++ }
					END {
						for (rs in n) { c = n[rs]; if ((rs in want) && c > want[rs]) c = want[rs]; if (av[rs] > c) c = av[rs]; p += c }
						print a + 0, p + 0, u + 0
					}' <<<"$out")"
			else
				mark[$m]="?"
			fi
		done
		printf '%s' "$(date +%T)"
		ta=0 tp=0 tu=0
		for m in m1 m2; do
			read -r a p u <<<"${last[$m]:-0 0 0}"
			ta=$((ta + a)) tp=$((tp + p)) tu=$((tu + u))
			printf '  %s %s/%s%-1s' "$m" "$a" "$p" "${mark[$m]}"
		done
		printf '   available %2d  pods %2d  on %s %2d\n' "$ta" "$tp" "$img" "$tu"
		sleep 1
	done
}

# ---------------------------------------------------------------------------

start=$SECONDS
# Every run starts from nothing: a fleet an earlier run kept (or left when
# interrupted) is deleted, with its files.
if compgen -G "$FLEET_DIR/*" >/dev/null; then
	note "removing what an earlier demo-fleet run left in $(rel "$FLEET_DIR")/"
	delete_fleet >/dev/null 2>&1 || true
	rm -rf "$FLEET_DIR"
	mkdir -p "$FLEET_DIR"
fi
touch "$FLEET_DIR/.demo-fleet"
trap cleanup EXIT
# Interrupted (Ctrl-C, a hang-up, kill): exit with the signal's status, so that
# cleanup knows the run failed.
trap 'exit 130' INT
trap 'exit 129' HUP
trap 'exit 143' TERM
mkdir -p "$CAPTURES"
web_v2="$FLEET_DIR/web-v2.yaml"
sed 's/image: web:v1/image: web:v2/' "$REPO/examples/fleet/web.yaml" >"$web_v2"
grep -q 'image: web:v2' "$web_v2" || die "examples/fleet/web.yaml has no 'image: web:v1' to change"

# ---------------------------------------------------------------------------
say "A fleet on this machine: a hub and $MEMBERS member clusters (kwok, Kubernetes 1.36, one simulated 8-GPU node each)"
note "the hub holds the fleet objects and runs no pods; each member schedules pods, which turn Ready 3-4s after binding"
# fleet-up.sh's whole output goes to fleet-up.log; a few of its lines are shown.
if ! (MEMBERS=$MEMBERS MEMBER_NODES=1 READY_DELAY=3s READY_JITTER=1s DELETE_DELAY=1s "$REPO/hack/dev/fleet-up.sh" 2>&1 |
	tee "$FLEET_DIR/fleet-up.log" | grep --line-buffered -E 'fleet ready|registered|creating cluster' >&3); then
	tail -n 30 "$FLEET_DIR/fleet-up.log" >&2
	die "hack/dev/fleet-up.sh failed (its output: $FLEET_DIR/fleet-up.log)"
fi
note "kubeconfigs and cluster state: $(rel "$FLEET_DIR")/ (kwokctl clusters $FLEET_NAME-hub, -m1 .. -m$MEMBERS)"

say "The controllers, in the background: lockstep hub on the hub, lockstep operator in each member"
# start_controller NAME VERB KUBECONFIG: `lockstep VERB` logging to NAME.log,
# its webhooks served from this host, waited for on its readiness probe. A
# port taken between its choice and the bind is chosen again.
start_controller() {
	local name=$1 verb=$2 kubeconfig=$3 probe try pid
	for try in 1 2 3; do
		probe="$(free_port)"
		start_bg "$name" "$FLEET_DIR/$name.log" "$LOCKSTEP" "$verb" \
			--kubeconfig "$kubeconfig" --dev-webhooks --leader-elect=false \
			--webhook-port "$(free_port)" --webhook-cert-dir "$FLEET_DIR/$name-webhook-certs" \
			--metrics-bind-address 0 --health-probe-bind-address "127.0.0.1:$probe"
		pid="$(<"$FLEET_DIR/$name.pid")"
		local deadline=$((SECONDS + 90))
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
			if curl -sf "http://127.0.0.1:$probe/readyz" >/dev/null 2>&1; then
				note "$name: pid $pid, log $(rel "$FLEET_DIR")/$name.log"
				return
			fi
			sleep 0.5
		done
		kill -0 "$pid" 2>/dev/null && die "$name was not ready within 90s (see $FLEET_DIR/$name.log)"
		grep -q 'address already in use' "$FLEET_DIR/$name.log" ||
			die "$name exited while starting (see $FLEET_DIR/$name.log)"
		cp "$FLEET_DIR/$name.log" "$FLEET_DIR/$name.log.$try"
	done
	die "$name found no free port in 3 tries (see $FLEET_DIR/$name.log)"
}
for ((i = 1; i <= MEMBERS; i++)); do
	start_controller "m$i-operator" operator "$FLEET_DIR/m$i.kubeconfig"
done
start_controller hub hub "$KUBECONFIG"
note "the hub reaches each member with the token fleet-up.sh registered for it, and probes it every 5s:"
until_ok 60 kubectl wait --for=condition=Ready --timeout=5s memberclusters --all ||
	die "the members did not turn Ready within 60s (see $FLEET_DIR/hub.log)"
expect 0 kubectl get memberclusters -L region,gpu
pause

# ---------------------------------------------------------------------------
say "A Placement chooses members by label: gpu=true is m1 (eu) and m2 (us), not m3"
cat >"$FLEET_DIR/gpu-clusters.yaml" <<'YAML'
apiVersion: fleet.lockstep.dev/v1alpha1
kind: Placement
metadata: {name: gpu-clusters, namespace: default}
spec:
  clusterSelector: {matchLabels: {gpu: "true"}}
YAML
expect 0 kubectl apply -f "$FLEET_DIR/gpu-clusters.yaml"
expect 0 kubectl lockstep status placement/gpu-clusters --timeout 1m
expect 0 kubectl lockstep get placement/gpu-clusters

say "examples/fleet/web.yaml on it: a Deployment of 10 pods, weighted eu 2 : us 3, so 4 in m1 and 6 in m2"
note "one budget for the whole fleet: at most 2 pods unavailable and 1 above 10, however many clusters"
expect 0 kubectl apply -f "$REPO/examples/fleet/web.yaml"
expect 0 kubectl lockstep status fw/web --timeout 2m >"$CAPTURES/status-web-created.txt"
note "its last line:"
tail -n 1 "$CAPTURES/status-web-created.txt"
expect 0 kubectl lockstep get fw/web
note "in the members, the hub's Deployments (label fleet.lockstep.dev/federatedworkload=default.web):"
for ((i = 1; i <= MEMBERS; i++)); do
	out="$(mctl "m$i" -n default get deploy -l fleet.lockstep.dev/federatedworkload=default.web --no-headers \
		-o custom-columns='NAME:.metadata.name,REPLICAS:.spec.replicas,READY:.status.readyReplicas,IMAGE:.spec.template.spec.containers[0].image')"
	printf '  m%s: %s\n' "$i" "${out:-none (gpu=false: not placed)}"
done
pause

# ---------------------------------------------------------------------------
say "The rollout to web:v2, recorded from start to end by 'kubectl lockstep get fw/web -w'"
note "members are granted in name order, and a Deployment member takes its whole share or nothing:"
note "m1 gets the budget first, and m2 keeps web:v1, paused, until m1 is done"
sample_pods web:v2 >"$CAPTURES/pods-web.txt" 2>/dev/null &
SAMPLER_PID=$!
expect 0 kubectl apply -f "$web_v2"
start_bg recorder "$CAPTURES/get-w-web.txt" "$LOCKSTEP" get fw/web -w --until-done --timeout 10m --no-color
m1_updated() { (($(mctl m1 -n default get deploy web -o 'jsonpath={.status.updatedReplicas}' || echo 0) > 0)); }
until_ok 60 m1_updated || die "m1 ran no web:v2 pod within 60s (see $FLEET_DIR/hub.log)"
expect 0 kubectl lockstep get fw/web

say "Mid-rollout, member m1 stops answering: its kube-apiserver is frozen (SIGSTOP)"
note "to the hub, m1 is now a cluster it cannot reach, as behind a network partition"
# Frozen, not stopped: `kwokctl stop cluster` and `start cluster` would free
# and bind again m1's ports, which kwokctl took from the kernel's ephemeral
# range; on a busy machine another connection can take one meanwhile, and m1
# does not come back (seen here: etcd's peer port). A frozen apiserver keeps
# every port, and its kwok its node's lease.
m1_workdir="$FLEET_DIR/m1/kwok/clusters/$FLEET_NAME-m1"
m1_apiserver="$(cat "$m1_workdir/pids/kube-apiserver.pid" 2>/dev/null)" || die "no pid file of m1's kube-apiserver in $m1_workdir/pids"
[[ "$({ tr '\0' ' ' <"/proc/$m1_apiserver/cmdline"; } 2>/dev/null)" == *kube-apiserver*"$m1_workdir/"* ]] ||
	die "pid $m1_apiserver is not m1's kube-apiserver"
note "(pid $m1_apiserver: m1's kube-apiserver, from $(rel "$m1_workdir")/pids/kube-apiserver.pid)"
expect 0 kill -STOP "$m1_apiserver"
FROZEN_PID="$m1_apiserver"
stopped_at=$SECONDS
note "within a probe or two (every 5s, 3s timeout) m1 turns Ready=False (Unreachable) and leaves the"
note "placement, which takes Ready members only"
until_ok 60 kubectl wait --for=condition=Ready=False --timeout=5s membercluster/m1 ||
	die "m1 did not turn Ready=False within 60s"
stale() { [[ "$(progressing)" == *"cluster m1: status stale"* ]]; }
until_ok 60 stale || die "the hub did not report m1 stale within 60s; Progressing: $(progressing)"
expect 0 kubectl get memberclusters -L region,gpu
expect 0 kubectl lockstep get placement/gpu-clusters
note "but the workload does not drop m1:"
expect 0 kubectl lockstep get fw/web
note "The hub cannot see m1's pods, and m1's own Deployment controller may still be acting on its"
note "last grant. So m1 keeps its share of 4 and is charged that whole grant, as the workload's line"
note "shows, and m2 gets neither the budget nor m1's pods. Only after memberLostTimeoutSeconds (300s)"
note "would m1 be lost: its whole share then counts as unavailable, and goes to the others."
m1_before="$(member_entry m1)" m2_before="$(member_entry m2)"
m2_started="$(grant_of "$m2_before" started)"
for _ in $(seq 10); do
	sleep 1
	m2_replicas="$(mctl m2 -n default get deploy web -o 'jsonpath={.spec.replicas}')"
	[[ "$m2_replicas" == 6 ]] || die "m2 took m1's share while m1 was unreachable: replicas $m2_replicas"
	m1_now="$(member_entry m1)" m2_now="$(member_entry m2)"
	[[ "$m1_now" == "$m1_before" ]] || die "m1's share or grant changed while it was unreachable: '$m1_before' -> '$m1_now'"
	# A machine slow enough to let m1 finish before it froze has m2 started
	# already: its grant then follows its own pods, within what m1 leaves.
	[[ "$m2_started" == true || "$m2_now" == "$m2_before" ]] ||
		die "m2 took budget while m1 was unreachable: its grant went from '$m2_before' to '$m2_now'"
done
note "checked every second for 10s (m1 unreachable for $((SECONDS - stopped_at))s): m1 keeps share and grant"
note "  ${m1_before#* }"
if [[ "$m2_started" == true ]]; then
	note "and m2 (started before m1 froze) keeps its share of 6, no more"
else
	note "and m2, 6 replicas in its cluster all along, stays as it was, with nothing to spend:"
	note "  ${m2_before#* }"
fi
pause

say "m1 answers again (SIGCONT): the hub reads it again and the rollout goes on"
expect 0 kill -CONT "$m1_apiserver"
FROZEN_PID=""
until_ok 60 kubectl wait --for=condition=Ready --timeout=5s membercluster/m1 || die "m1 did not turn Ready within 60s"
note "m1 is Ready again, back in the placement; live until the rollout is done:"
if [[ -t 1 && "$DEMO_AUTO" != 1 ]]; then
	expect 0 kubectl lockstep get fw/web -w --until-done --timeout 5m
else
	expect 0 kubectl lockstep get fw/web -w --until-done --timeout 5m --no-color >"$CAPTURES/get-w-web-after-m1.txt"
	note "$(grep -c '^--- ' "$CAPTURES/get-w-web-after-m1.txt") redraws kept in $(rel "$CAPTURES")/get-w-web-after-m1.txt; the last:"
	last_frame "$CAPTURES/get-w-web-after-m1.txt"
fi
expect 0 kubectl lockstep status fw/web --timeout 3m
kill "$SAMPLER_PID" 2>/dev/null || true
SAMPLER_PID=""

say "The budget, counted from the pods of both members (sampled every second), each change:"
awk '{ k = $0; sub(/^[^ ]+/, "", k); if (k != last) print "  " $0; last = k }' "$CAPTURES/pods-web.txt" >&3
read -r min_avail max_pods < <(awk '{ for (i = 1; i <= NF; i++) { if ($i == "available") a = $(i + 1); if ($i == "pods") p = $(i + 1) }
	if (NR == 1 || a < mina) mina = a; if (p > maxp) maxp = p } END { print mina + 0, maxp + 0 }' "$CAPTURES/pods-web.txt")
note "('?': m1 not answering, counted as last seen) never fewer than $min_avail available, never more than $max_pods pods"
((min_avail >= 8 && max_pods <= 11)) ||
	die "the pods left the budget of 10 - 2 = 8 available and 10 + 1 = 11 pods (samples: $CAPTURES/pods-web.txt)"
note "within 10 - maxUnavailable 2 = 8 and 10 + maxSurge 1 = 11, across the whole fleet"
until_ok 30 test ! -e "/proc/$(cat "$FLEET_DIR/recorder.pid" 2>/dev/null || echo 0)" || true
frames="$(grep -c '^--- ' "$CAPTURES/get-w-web.txt" || true)"
over="$(awk '/ web +rev / { if (match($0, /maxUnavailable [0-9]+ \([0-9]+ used\)/)) { split(substr($0, RSTART, RLENGTH), u, /[ (]+/); if (u[3] > u[2]) n++ } } END { print n + 0 }' "$CAPTURES/get-w-web.txt")"
note "the hub's own view: $frames redraws of get fw/web -w in $(rel "$CAPTURES")/get-w-web.txt"
if ((over > 0)); then
	note "($over of them show more than 2 unavailable, and BelowMinimumAvailable: while a member's"
	note " ReplicaSets have not reported their latest change, the hub's status counts only the"
	note " pods it is sure of there, fewer than are Ready; the pods above are what ran)"
fi
pause

# ---------------------------------------------------------------------------
say "PodCliqueSets too: a FederatedWorkload of Lockstep's own kind, placed by region=eu (m1 and m3)"
note "each member's operator rolls its PodCliqueSet; the hub lowers the members' partitions so that"
note "one replica (a frontend and 2 GPU engines) is down in the whole fleet at a time (maxUnavailable 1)"
llm="$FLEET_DIR/llm.yaml"
cat >"$llm" <<'YAML'
apiVersion: fleet.lockstep.dev/v1alpha1
kind: Placement
metadata: {name: eu-clusters, namespace: default}
spec:
  clusterSelector: {matchLabels: {region: eu}}
---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: FederatedWorkload
metadata: {name: llm, namespace: default}
spec:
  placementRef: {name: eu-clusters}
  replicas: 4
  rolloutStrategy: {maxUnavailable: 1}
  template:
    apiVersion: lockstep.dev/v1alpha1
    kind: PodCliqueSet
    spec:
      template:
        cliques:
        - name: frontend
          replicas: 1
          template:
            spec:
              containers:
              - {name: frontend, image: "lockstep-examples/llm-frontend:v1"}
        - name: engine
          replicas: 2
          template:
            spec:
              containers:
              - name: engine
                image: "lockstep-examples/llm-engine:v1"
                resources: {limits: {nvidia.com/gpu: 1}}
YAML
sed 's/:v1"/:v2"/' "$llm" >"$FLEET_DIR/llm-v2.yaml"
expect 0 kubectl apply -f "$llm"
expect 0 kubectl lockstep status fw/llm --timeout 2m >"$CAPTURES/status-llm-created.txt"
note "its last line:"
tail -n 1 "$CAPTURES/status-llm-created.txt"
note "in m1 and m3, a PodCliqueSet of 2 replicas each (m2, region=us, has none):"
for m in m1 m3; do
	printf '  %s: %s\n' "$m" "$(mctl "$m" -n default get pcs llm --no-headers)"
done
expect 0 kubectl apply -f "$FLEET_DIR/llm-v2.yaml"
if [[ -t 1 && "$DEMO_AUTO" != 1 ]]; then
	expect 0 kubectl lockstep get fw/llm -w --until-done --timeout 5m
else
	expect 0 kubectl lockstep get fw/llm -w --until-done --timeout 5m --no-color >"$CAPTURES/get-w-llm.txt"
	note "$(grep -c '^--- ' "$CAPTURES/get-w-llm.txt") redraws kept in $(rel "$CAPTURES")/get-w-llm.txt; the workload's line at each change:"
	awk '/^--- / { t = $2; next } / llm +rev / && $0 != last { print "  " (t ? t : "start   ") "  " $0; last = $0 }' "$CAPTURES/get-w-llm.txt" >&3
fi
expect 0 kubectl lockstep status fw/llm --timeout 3m
pause

# ---------------------------------------------------------------------------
say "Summary"
expect 0 kubectl lockstep status fw/web --watch=false
cat <<MSG
  A Placement chose members by label; web's 10 pods were split 4/6 over them
  and rolled to web:v2 under one budget for the fleet (2 unavailable, 1 above
  10, as counted from the pods). m1 stopped answering mid-rollout: the hub kept
  its share and charged its grant until it answered again. A PodCliqueSet on
  other members rolled one replica at a time across the fleet. Every step
  exited as expected.
  Captures: $(rel "$CAPTURES")/   logs: $(rel "$FLEET_DIR")/hub.log, m<i>-operator.log
MSG
if [[ "$DEMO_KEEP" == 1 ]]; then
	cat <<MSG
  DEMO_KEEP=1: the fleet, the hub and the operators keep running:
    export KUBECONFIG=$KUBECONFIG PATH=$BIN:\$PATH
    kubectl lockstep get fw/web
  make demo-fleet-down removes them.
MSG
fi
echo "  Demo wall time: $((SECONDS - start))s"
