#!/usr/bin/env bash
# The full fault suite (make chaos): CHAOS_PROCS runs of the chaos test side
# by side, each on its own local cluster with its own operator pair and seed
# (LOCKSTEP_E2E_SEED + i), each injecting every fault CHAOS_RUNS times. With
# the defaults (5 x 6) every fault goes into every strategy 5 times. The runs'
# tables are added up into one at the end; the logs stay in .dev/chaos/.
# The operators log at debug level (every plan with its inputs) unless
# LOCKSTEP_E2E_OPERATOR_LOG_LEVEL says otherwise.
# Environment: LOCKSTEP_BIN (required), CHAOS_PROCS, CHAOS_RUNS,
# LOCKSTEP_E2E_SEED, LOCKSTEP_CHAOS_FAULTS, LOCKSTEP_CHAOS_STRATEGIES,
# LOCKSTEP_E2E_OPERATOR_LOG_LEVEL.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${LOCKSTEP_BIN:?set LOCKSTEP_BIN to the bin/ directory (make chaos does)}"
procs=${CHAOS_PROCS:-5}
runs=${CHAOS_RUNS:-6}
seed=${LOCKSTEP_E2E_SEED:-20251122}
out=.dev/chaos
mkdir -p "$out"
rm -f "$out"/*.log "$out"/*.tsv

echo "chaos: $procs run(s) side by side, each fault injected $runs time(s) per run, seeds $seed..$((seed + procs - 1))"
go test -c -tags e2e -o "$out/e2e.test" ./test/e2e/
pids=()
for i in $(seq 0 $((procs - 1))); do
	# A cluster started while the others are busy may not come up in time:
	# up to three tries.
	for try in 1 2 3; do
		(
			cd test/e2e
			LOCKSTEP_E2E_SEED=$((seed + i)) LOCKSTEP_CHAOS_RUNS=$runs LOCKSTEP_E2E_OPERATOR_LOG_LEVEL=${LOCKSTEP_E2E_OPERATOR_LOG_LEVEL:-debug} \
				LOCKSTEP_E2E_CLUSTER=lockstep-chaos-$i LOCKSTEP_CHAOS_RESULTS="$PWD/../../$out/$i.tsv" \
				exec "../../$out/e2e.test" -test.count=1 -test.timeout=150m -test.v \
				-test.run '^TestChaos_RolloutsSurviveFaults$'
		) >"$out/$i.log" 2>&1 &
		pids[i]=$!
		# Clusters started together race for the same free ports: the next
		# one starts once this one's operator runs.
		until grep -q 'e2e: operator running' "$out/$i.log" || ! kill -0 "${pids[$i]}" 2>/dev/null; do sleep 2; done
		grep -q 'e2e: operator running' "$out/$i.log" && break
		wait "${pids[$i]}" || true
		echo "chaos: run $i did not start (try $try): $(grep 'e2e: cannot' "$out/$i.log" | head -1)"
		cp "$out/$i.log" "$out/$i.start-$try.log"
	done
	echo "chaos: run $i (seed $((seed + i))) started, log $out/$i.log"
done

# Progress: rollouts begun per run, once a minute.
(
	while sleep 60; do
		line="chaos: $(date +%T) rollouts begun:"
		for i in $(seq 0 $((procs - 1))); do
			line+=" $(grep -c ' under "' "$out/$i.log" || true)"
		done
		echo "$line"
	done
) &
progress=$!
trap 'kill $progress 2>/dev/null || true' EXIT

failed=0
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		echo "chaos: run $i (seed $((seed + i))) FAILED; see $out/$i.log"
		failed=1
	fi
done

echo
echo "chaos results: $procs run(s) x LOCKSTEP_CHAOS_RUNS=$runs, seeds $seed..$((seed + procs - 1))"
echo "| fault | strategy | runs | injected mid-rollout | violations | rollouts finished | mean time |"
echo "| --- | --- | --: | --: | --: | --: | --: |"
cat "$out"/*.tsv 2>/dev/null | awk -F'\t' '
	{ k = $1 "\t" $2; if (!(k in runs)) order[n++] = k
	  runs[k] += $3; mid[k] += $4; viol[k] += $5; fin[k] += $6; secs[k] += $7 }
	END { for (i = 0; i < n; i++) { k = order[i]; split(k, f, "\t")
		printf "| %s | %s | %d | %d | %d | %d/%d | %.1fs |\n", f[1], f[2], runs[k], mid[k], viol[k], fin[k], runs[k], secs[k] / runs[k] } }'
echo
echo "rollouts complete before their fault's moment, rolled again so that the fault landed mid-rollout: $(cat $(seq -f "$out/%g.log" 0 $((procs - 1))) | grep -c 'rolling again to inject it mid-rollout' || true)"
exit "$failed"
