# shellcheck shell=bash
# Helpers shared by the narrated demos (hack/demo.sh, hack/demo-fleet.sh);
# sourced, not run. Both scripts define die.

# until_ok SECONDS CMD...: poll CMD until it succeeds.
until_ok() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
}

# free_port: a port no socket uses, below the kernel's ephemeral range
# (32768 and up by default), where kwokctl's ports and every outgoing
# connection's come from.
free_port() {
	local p low
	low="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % (low - 20000)))
		if command -v ss >/dev/null; then
			[[ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ]] && { echo "$p"; return; }
		else
			(: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
		fi
	done
	die "no free port"
}
