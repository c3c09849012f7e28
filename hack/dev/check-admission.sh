#!/usr/bin/env bash
# Apply every example (must be accepted) and every manifest of the invalid corpus
# (must be rejected with the messages its "# expect:" lines name) to the cluster
# of $KUBECONFIG, through kubectl, as a user would. Needs `make run` serving the
# webhooks. Corpus files with two documents create the first and update to the
# second.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kubectl="${KUBECTL:-$root/bin/kubectl}"
ns="lockstep-admission-check"
"$kubectl" create namespace "$ns" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
"$kubectl" -n "$ns" delete podcliquesets --all --wait=false >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"; "$kubectl" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT

failed=0
for f in "$root"/examples/*.yaml; do
	if out="$("$kubectl" -n "$ns" apply -f "$f" 2>&1)"; then
		echo "accepted  $(basename "$f")"
	else
		echo "REJECTED  $(basename "$f"): $out"
		failed=$((failed + 1))
	fi
done
for f in "$root"/test/testdata/invalid/*.yaml; do
	# Split on document separators: all but the last document set the scene.
	awk -v dir="$tmp" 'BEGIN{n=0} /^---$/{n++; next} {print > (dir "/doc" n)}' "$f"
	last="$(find "$tmp" -name 'doc*' | sort | tail -1)"
	for doc in $(find "$tmp" -name 'doc*' | sort); do
		[[ "$doc" == "$last" ]] || "$kubectl" -n "$ns" apply -f "$doc" >/dev/null
	done
	if out="$("$kubectl" -n "$ns" apply -f "$last" 2>&1)"; then
		echo "ACCEPTED  $(basename "$f") (want a rejection)"
		failed=$((failed + 1))
	else
		missing=""
		while read -r want; do
			[[ "$out" == *"$want"* ]] || missing+=" [$want]"
		done < <(sed -n 's/^# expect: //p' "$f")
		if [[ -n "$missing" ]]; then
			echo "WRONG     $(basename "$f"): message lacks$missing: $out"
			failed=$((failed + 1))
		else
			echo "rejected  $(basename "$f"): ${out:0:240}"
		fi
	fi
	rm -f "$tmp"/doc*
done
if ((failed > 0)); then
	echo "$failed manifest(s) not handled as expected"
	exit 1
fi
echo "all examples accepted, every invalid manifest rejected with its message"
