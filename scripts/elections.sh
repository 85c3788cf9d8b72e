#!/usr/bin/env bash
# elections.sh: count the leader changes of a local three-node cluster (sepp dev)
# over a window, under a chosen load and neighbour, with no fault injected
# during the window, so that every change counted is one no fault caused;
# or (-f) with the fault campaign's restart and pause faults applied to
# followers only, which must cause no leader change either.
#
#   scripts/elections.sh [-d DURATION_S] [-l idle|mixed] [-n none|iomix]
#                        [-m] [-f SECONDS] [-b SEPP_BINARY] [-x EXTRA_TOML]
#
#   -d  window in seconds (default 120)
#   -l  load: idle, or `sepp bench --scenarios mixed` for the whole window
#   -n  neighbour: none, or `stress-ng --iomix 4 --cpu 8` (bounded by --timeout)
#   -m  one member down: a follower is killed before the window starts
#   -f  every SECONDS, a random follower (never the leader) is, in turn,
#       restarted (SIGTERM, then started again at once) or paused (SIGSTOP
#       for 0.4-3 s, then SIGCONT), as the fault campaign's restart and pause
#       faults do (docs/nemesis.md); every leader change then is counted
#       from the nodes' logs, since a restarted node's counters start at 0
#   -b  the sepp binary (default: go build ./cmd/sepp into a temp dir)
#   -x  a TOML file appended to every node's config (sepp dev --extra), to try
#       other [cluster] timings
#
# It reads sepp_raft_leader_changes_total and sepp_raft_elections_total from
# every running node's /metrics at the start and end of the window and prints
# the differences; a binary without those metrics is counted from its log
# ("entering leader state" lines). The cluster, stress-ng and the bench are
# stopped on exit.
set -euo pipefail

dur=120 load=idle neighbour=none down=0 faults=0 bin="" extra=""
while getopts "d:l:n:mf:b:x:" opt; do
	case $opt in
	d) dur=$OPTARG ;;
	l) load=$OPTARG ;;
	n) neighbour=$OPTARG ;;
	m) down=1 ;;
	f) faults=$OPTARG ;;
	b) bin=$OPTARG ;;
	x) extra=$OPTARG ;;
	*) sed -n '2,/^set -e/p' "$0" | sed '$d' >&2; exit 2 ;;
	esac
done
case $load in idle | mixed) ;; *) echo "elections.sh: -l must be idle or mixed" >&2; exit 2 ;; esac
case $neighbour in none | iomix) ;; *) echo "elections.sh: -n must be none or iomix" >&2; exit 2 ;; esac
if [[ $neighbour == iomix ]] && ! command -v stress-ng >/dev/null; then
	echo "elections.sh: stress-ng not installed (apt-get install stress-ng)" >&2
	exit 1
fi
[[ $faults =~ ^[0-9]+$ ]] || { echo "elections.sh: -f must be a whole number of seconds" >&2; exit 2; }
((faults && down)) && { echo "elections.sh: -f and -m do not go together" >&2; exit 2; }

work=$(mktemp -d -t sepp-elections.XXXXXX) # under $TMPDIR
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n ${SEPP_ELECTIONS_KEEP:-} ]]; then echo "kept: $work" >&2; else rm -rf "$work"; fi
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
mapfile -t grpcs < <(awk '$1 ~ /^sepp-/ {print $3}' "$work/dev.out")
mapfile -t npids < <(awk '$1 ~ /^sepp-/ {print $9}' "$work/dev.out")

metric() { # metric HTTP_ADDR NAME [LABELS]: the sum of the series NAME{...LABELS...}, or empty
	curl -s --max-time 2 "http://$1/metrics" 2>/dev/null |
		awk -v n="$2" -v l="${3:-}" '($1 == n || index($1, n "{") == 1) && index($1, l) { s += $2; f = 1 } END { if (f) print s }'
}
leaders_in_log() { grep -c 'entering leader state' "$work/dev/$1/sepp.log" 2>/dev/null || true; }
leader_index() { # which node answers that it leads (its gauge), else -1
	for i in "${!ids[@]}"; do
		[[ $(metric "${https[$i]}" sepp_raft_state state=\"Leader\") == 1 ]] && { echo "$i"; return; }
	done
	echo -1
}

# Let the first election settle.
sleep 3
alive=("${!ids[@]}")
if ((down)); then
	li=$(leader_index)
	victim=$(( (li + 1) % ${#ids[@]} ))
	((li < 0)) && victim=2
	kill -9 "${npids[$victim]}"
	echo "one member down: ${ids[$victim]} killed"
	alive=()
	for i in "${!ids[@]}"; do ((i != victim)) && alive+=("$i"); done
	sleep 2
fi

declare -A c0 e0 l0
for i in "${alive[@]}"; do
	c0[$i]=$(metric "${https[$i]}" sepp_raft_leader_changes_total)
	e0[$i]=$(metric "${https[$i]}" sepp_raft_elections_total)
	l0[$i]=$(leaders_in_log "${ids[$i]}")
done

if [[ $neighbour == iomix ]]; then
	stress-ng --iomix 4 --cpu 8 --timeout "${dur}s" --temp-path "$work" >"$work/stress.out" 2>&1 &
	pids+=($!)
fi
addrs=$(IFS=,; echo "${grpcs[*]}")
if [[ $load == mixed ]]; then
	"$bin" bench --addr "$addrs" --scenarios mixed --mixed-duration "${dur}s" --e2e-duration 1s >"$work/bench.out" 2>&1 &
	bench=$!
	pids+=($bench)
fi

# restart_node I: SIGTERM node I (a graceful stop), then start it again at
# once with the command line and GOMAXPROCS sepp dev gave it, appending to
# its log; the new process is this script's to stop.
restart_node() {
	local i=$1 pid=${npids[$1]} argv gmp
	mapfile -d '' -t argv <"/proc/$pid/cmdline"
	gmp=$(tr '\0' '\n' <"/proc/$pid/environ" | grep '^GOMAXPROCS=' || true)
	kill -TERM "$pid"
	for _ in $(seq 1 200); do [[ -d /proc/$pid ]] || break; sleep 0.05; done
	[[ -d /proc/$pid ]] && kill -9 "$pid"
	env ${gmp:+"$gmp"} "${argv[@]}" >>"$work/dev/${ids[$i]}/sepp.log" 2>&1 &
	npids[$i]=$!
	pids+=($!)
}
pause_node() { # pause_node I: SIGSTOP node I for 0.4-3 s, then SIGCONT
	local ms=$((400 + RANDOM % 2601))
	kill -STOP "${npids[$1]}"
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -CONT "${npids[$1]}"
	echo "$ms"
}

echo "window: ${dur}s, load $load, neighbour $neighbour, members up ${#alive[@]}/${#ids[@]}$( ((faults)) && echo ", follower faults every ${faults}s" || true)"
if ((faults)); then
	declare -A lf0
	for i in "${!ids[@]}"; do lf0[$i]=$(leaders_in_log "${ids[$i]}"); done
	end=$((SECONDS + dur)) kind=restart restarts=0 pauses=0 skipped=0
	while ((SECONDS + faults < end)); do
		sleep "$faults"
		# On a host this loaded a scrape can time out: ask for up to 10 s
		# before skipping the fault.
		for _ in $(seq 1 10); do
			li=$(leader_index)
			((li >= 0)) && break
			sleep 1
		done
		if ((li < 0)); then
			skipped=$((skipped + 1))
			echo "$(date -u +%T) no node says it leads: fault skipped"
			continue
		fi
		victim=$(( (li + 1 + RANDOM % 2) % ${#ids[@]} ))
		if [[ $kind == restart ]]; then
			restart_node "$victim"
			restarts=$((restarts + 1))
			echo "$(date -u +%T) restarted follower ${ids[$victim]} (leader ${ids[$li]})"
			kind=pause
		else
			echo "$(date -u +%T) paused follower ${ids[$victim]} for $(pause_node "$victim") ms (leader ${ids[$li]})"
			pauses=$((pauses + 1))
			kind=restart
		fi
	done
	((SECONDS < end)) && sleep $((end - SECONDS))
	echo "follower faults: $restarts restarts, $pauses pauses, $skipped skipped"
else
	sleep "$dur"
fi
if [[ $load == mixed ]]; then
	# sepp bench gives up on an ack whose outcome stays unknown (no leader):
	# the rest of the window then ran without load, so say so.
	wait "$bench" || echo "bench ended early: $(grep -v '^\[bench' "$work/bench.out" | tail -1)"
	grep -E '^mixed_(enqueue_rate|completed_rate|backlog)' "$work/bench.out" || tail -5 "$work/bench.out"
fi

# Every member sees every leadership, so the changes of the cluster are the
# most any member counted; from logs, each node logs only its own.
total=0 fromlog=0
if ((faults)); then
	for i in "${!ids[@]}"; do
		became=$(($(leaders_in_log "${ids[$i]}") - lf0[$i]))
		echo "${ids[$i]}: became leader $became times (from its log)"
		fromlog=$((fromlog + became))
	done
	alive=()
fi
for i in "${alive[@]}"; do
	c1=$(metric "${https[$i]}" sepp_raft_leader_changes_total)
	e1=$(metric "${https[$i]}" sepp_raft_elections_total)
	l1=$(leaders_in_log "${ids[$i]}")
	if [[ -n ${c0[$i]} && -n $c1 ]]; then
		changes=$((${c1%.*} - ${c0[$i]%.*}))
		elections=$((${e1%.*} - ${e0[$i]%.*}))
		echo "${ids[$i]}: leader_changes $changes elections_started $elections"
		((changes > total)) && total=$changes
	else
		became=$((l1 - l0[$i]))
		echo "${ids[$i]}: became leader $became times (from its log)"
		fromlog=$((fromlog + became))
	fi
done
((fromlog > total)) && total=$fromlog
if grep -hq 'failed to contact quorum\|heartbeat timeout reached\|leader.s process is gone' "$work"/dev/*/sepp.log 2>/dev/null; then
	echo "causes in the logs:"
	grep -ho 'failed to contact quorum[^"]*\|heartbeat timeout reached\|leader.s process is gone\|called an election for the crashed leader\|failed to appendEntries\|leadership lost' "$work"/dev/*/sepp.log | sort | uniq -c
fi
echo "unprovoked_leader_changes: $total"
