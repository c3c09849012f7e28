#!/usr/bin/env bash
# Run the planner benchmarks and print each PodClique plan as a multiple of the
# baseline (sorting the same pods oldest-first) measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(go test -run '^$' -bench . -benchmem -count "${COUNT:-3}" ./internal/rollout/)"
echo "$out" | grep -E '^(Benchmark|goos|goarch|cpu)'
echo
printf "%-62s %12s %10s\n" "plan (mean of runs)" "ns/op" "x baseline"
echo "$out" | awk '
	/^Benchmark/ { name=$1; sub(/-[0-9]+$/, "", name); ns[name]+=$3; n[name]++ }
	END {
		for (k in ns) if (k ~ /PlanLevel/) {
			size=k; sub(/.*pods=/, "", size)
			base="BenchmarkBaseline_SortPodsOldestFirst/pods=" size
			printf "%-62s %12.0f %10.2f\n", k, ns[k]/n[k], (ns[k]/n[k])/(ns[base]/n[base])
		}
		for (k in ns) if (k ~ /PlanTree/) printf "%-62s %12.0f\n", k, ns[k]/n[k]
	}' | sort

echo
echo "the operator's cache, per pod (a disaggregated engine's pod as served), without and with pods.TrimForCache:"
go test -run '^$' -bench CachedPod -benchtime 3x ./internal/observe/pods/ | grep -E '^BenchmarkCachedPod' | awk '{ printf "  %-28s %8.0f bytes\n", $1, $5 }'
