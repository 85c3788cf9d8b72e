#!/usr/bin/env bash
# failover-dist.sh: the distribution of the time a local three-node cluster
# (sepp dev) takes to replace its leader, over N rounds of one fault each.
#
#   scripts/failover-dist.sh [-r ROUNDS] [-k stop|kill] [-n none|iomix]
#                            [-b SEPP_BINARY] [-x EXTRA_TOML]
#
#   -r  rounds (default 20)
#   -k  stop: SIGSTOP the leader (a frozen process closes no connection, so
#       only raft's heartbeat timeout can replace it), SIGCONT it once
#       another node leads; kill: SIGKILL the leader (crash detection
#       replaces it), then start it again
#   -n  neighbour: none, or `stress-ng --iomix 4 --cpu 8` for the whole run
#   -b  the sepp binary (default: go build ./cmd/sepp into a temp dir)
#   -x  a TOML file appended to every node's config (sepp dev --extra)
#
# A round's figure is from the signal to the first poll at which a
# survivor's /metrics says it leads; the two survivors are polled in turn
# with curl, about every 5-10 ms, which is the figures' resolution. Between
# rounds it waits until all three nodes answer and agree on one leader.
# Prints every round, then min, median, p90 and max in ms.
set -euo pipefail

rounds=20 kind=stop neighbour=none bin="" extra=""
while getopts "r:k:n:b:x:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	k) kind=$OPTARG ;;
	n) neighbour=$OPTARG ;;
	b) bin=$OPTARG ;;
	x) extra=$OPTARG ;;
	*) sed -n '2,/^set -e/p' "$0" | sed '$d' >&2; exit 2 ;;
	esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "failover-dist.sh: -r must be a positive whole number" >&2; exit 2; }
case $kind in stop | kill) ;; *) echo "failover-dist.sh: -k must be stop or kill" >&2; exit 2 ;; esac
case $neighbour in none | iomix) ;; *) echo "failover-dist.sh: -n must be none or iomix" >&2; exit 2 ;; esac

work=$(mktemp -d -t sepp-failover-dist.XXXXXX) # under $TMPDIR
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n ${SEPP_FAILOVER_KEEP:-} ]]; then echo "kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

if [[ -z $bin ]]; then
	bin=$work/sepp
	(cd "$(dirname "$0")/.." && go build -o "$bin" ./cmd/sepp)
fi
"$bin" dev --dir "$work/dev" ${extra:+--extra "$extra"} >"$work/dev.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
	grep -q 'Ctrl-C stops' "$work/dev.out" 2>/dev/null && break
	sleep 0.1
done
grep -q 'Ctrl-C stops' "$work/dev.out" || { cat "$work/dev.out" >&2; exit 1; }
mapfile -t ids < <(awk '$1 ~ /^sepp-/ {print $1}' "$work/dev.out")
mapfile -t https < <(awk '$1 ~ /^sepp-/ {print $5}' "$work/dev.out")
mapfile -t npids < <(awk '$1 ~ /^sepp-/ {print $9}' "$work/dev.out")

leads() { # leads I: node I's gauge says it is the leader
	curl -s --max-time 0.2 "http://${https[$1]}/metrics" 2>/dev/null |
		awk 'index($1, "sepp_raft_state{") == 1 && index($1, "state=\"Leader\"") && $2 == 1 { f = 1 } END { exit !f }'
}
leader_of_all() { # the one leader all three nodes run beside, or -1
	local li=-1 n=0
	for i in "${!ids[@]}"; do
		curl -s --max-time 0.5 "http://${https[$i]}/metrics" >/dev/null 2>&1 || { echo -1; return; }
		if leads "$i"; then li=$i; n=$((n + 1)); fi
	done
	((n == 1)) && echo "$li" || echo -1
}
start_again() { # start node I again with the command line it had
	local i=$1
	env ${gmps[$i]:+"${gmps[$i]}"} ${argvs[$i]} >>"$work/dev/${ids[$i]}/sepp.log" 2>&1 &
	npids[$i]=$!
	pids+=($!)
}
declare -A argvs gmps
for i in "${!ids[@]}"; do
	argvs[$i]=$(tr '\0' ' ' <"/proc/${npids[$i]}/cmdline")
	gmps[$i]=$(tr '\0' '\n' <"/proc/${npids[$i]}/environ" | grep '^GOMAXPROCS=' || true)
done

if [[ $neighbour == iomix ]]; then
	command -v stress-ng >/dev/null || { echo "failover-dist.sh: stress-ng not installed (apt-get install stress-ng)" >&2; exit 1; }
	stress-ng --iomix 4 --cpu 8 --timeout 1800s --temp-path "$work" >"$work/stress.out" 2>&1 &
	pids+=($!)
fi

figures=()
for r in $(seq 1 "$rounds"); do
	li=-1
	for _ in $(seq 1 300); do
		li=$(leader_of_all)
		((li >= 0)) && break
		sleep 0.1
	done
	((li >= 0)) || { echo "round $r: no settled leader within 30 s" >&2; exit 1; }
	sleep 1 # the new term's first entries commit everywhere
	if [[ $kind == stop ]]; then kill -STOP "${npids[$li]}"; else kill -9 "${npids[$li]}"; fi
	t0=$(date +%s%N)
	replaced=0
	while ((replaced == 0)); do
		for i in "${!ids[@]}"; do
			((i == li)) && continue
			if leads "$i"; then replaced=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
		done
		(( $(date +%s%N) - t0 > 30000000000 )) && { echo "round $r: no new leader within 30 s" >&2; exit 1; }
	done
	figures+=("$replaced")
	echo "round $r: ${kind} ${ids[$li]} at $(date -u -d "@$((t0 / 1000000000)).$(printf '%09d' $((t0 % 1000000000)))" +%T.%3N), replaced after ${replaced} ms (load $(cut -d' ' -f1 /proc/loadavg))"
	if [[ $kind == stop ]]; then kill -CONT "${npids[$li]}"; else start_again "$li"; fi
done
printf '%s\n' "${figures[@]}" | sort -n | awk -v k="$kind" '{ a[NR] = $1 } END {
	printf "%s: rounds %d  min %d  median %d  p90 %d  max %d ms\n", k, NR, a[1], a[int((NR + 1) / 2)], a[int(NR * 0.9 + 0.999)], a[NR] }'
