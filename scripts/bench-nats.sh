#!/usr/bin/env bash
# bench-nats.sh [ROUNDS]
#
# Runs `sepp bench` and the same workloads against NATS JetStream, the
# fastest replicated peer, alternately on the same host, ROUNDS times (default
# 2): a shared VM's speed moves by a factor of two from day to day, so a
# peer's figure only means something measured in the same minutes as sepp's.
#
# NATS side: nats-server and the nats CLI (its `nats bench`) are installed
# with `go install` from the Go module proxy into .cache/peers (not part of
# sepp's build); a three-node cluster on loopback, JetStream file storage,
# streams with three replicas, run twice each round: with
# `sync_interval: always` (fsync on every write, as sepp always does;
# figures nats_*) and with NATS's default lazy fsync (every 2 minutes;
# figures nats_lazy_*), the configuration NATS publishes its own figures
# with. The workloads, as close to sepp bench's as `nats bench` allows:
#   produce  100,000 × 256 B, async publish, 256 outstanding (--batch 256)
#   sync     2,000 publishes one at a time; p50 / p99
#   consume  16 clients fetching 100 at a time, with --doubleack (each ack
#            confirmed by the server, one at a time: NATS has no batch ack
#            with a result per message) and without (acks unconfirmed)
#   mixed    4 async publishers (64 outstanding each) and 4 fetching
#            consumers (100 at a time, unconfirmed acks) at once, 150,000
#            messages; completed = the consumers' rate
# sepp side: `bin/sepp bench --scenarios produce,latency,consume,mixed`
# (build it first with `make build`).
#
# Both are Go programs, and both get the same share of the host's CPUs,
# as `sepp bench` gives its own processes: each server GOMAXPROCS
# nproc/3, the benchmark client nproc/4 (at least 1). GOMAXPROCS set in the
# environment applies to every process of both instead (GOMAXPROCS=$(nproc)
# runs everything with Go's default).
#
#   scripts/bench-nats.sh 3
#   make bench-nats ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-2}
nats_server_version=v2.15.2
natscli_version=v0.5.0
peers=$PWD/.cache/peers

[[ -x bin/sepp ]] || { echo "bin/sepp is missing: run make build first" >&2; exit 1; }
mkdir -p "$peers/bin"
if [[ ! -x $peers/bin/nats-server || ! -x $peers/bin/nats ]]; then
  echo "installing nats-server $nats_server_version and natscli $natscli_version into $peers/bin" >&2
  GOBIN=$peers/bin go install "github.com/nats-io/nats-server/v2@$nats_server_version"
  GOBIN=$peers/bin go install "github.com/nats-io/natscli/nats@$natscli_version"
fi

work=$(mktemp -d)
stop_nats() {
  pkill -f "nats-server -c $work/" 2>/dev/null || return 0
  for _ in $(seq 100); do
    pgrep -f "nats-server -c $work/" >/dev/null || return 0
    sleep 0.1
  done
  pkill -9 -f "nats-server -c $work/" 2>/dev/null || true
}
trap 'stop_nats; rm -rf "$work"' EXIT

cpus=$(nproc)
server_procs=${GOMAXPROCS:-$((cpus / 3 > 0 ? cpus / 3 : 1))}
client_procs=${GOMAXPROCS:-$((cpus / 4 > 0 ? cpus / 4 : 1))}

urls=nats://127.0.0.1:14222,nats://127.0.0.1:14223,nats://127.0.0.1:14224
nats() { GOMAXPROCS=$client_procs "$peers/bin/nats" -s "$urls" "$@"; }

# start_nats SYNC: SYNC is "always" or "default" (NATS's lazy fsync).
start_nats() {
  local sync=$1 sync_conf=""
  [[ $sync == always ]] && sync_conf=", sync_interval: always"
  stop_nats
  rm -rf "$work/data"
  for i in 1 2 3; do
    mkdir -p "$work/data/n$i"
    cat >"$work/n$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:$((14221 + i))
jetstream { store_dir: "$work/data/n$i"$sync_conf }
cluster {
  name: bench
  listen: 127.0.0.1:$((16221 + i))
  routes: [nats-route://127.0.0.1:16222, nats-route://127.0.0.1:16223, nats-route://127.0.0.1:16224]
}
EOF
    GOMAXPROCS=$server_procs "$peers/bin/nats-server" -c "$work/n$i.conf" >"$work/data/n$i.log" 2>&1 &
  done
  # JetStream is ready once a stream with three replicas can be created.
  for _ in $(seq 100); do
    nats stream add ready --subjects ready --replicas 3 --storage file --defaults >/dev/null 2>&1 && return
    sleep 0.2
  done
  echo "the NATS cluster did not become ready; logs in $work/data" >&2
  exit 1
}

# figure NAME FIELD UNIT SCALE: reads a `nats bench` stats line on stdin and
# prints "NAME: value UNIT" for FIELD (msgs/sec, P50, P99), values in µs
# scaled by SCALE (0.001 for ms).
figure() {
  awk -v name="$1" -v field="$2" -v unit="$3" -v scale="$4" '
    /stats:/ {
      line = $0; gsub(/,/, "", line)
      n = split(line, parts, " ~ ")
      for (i = 1; i <= n; i++) {
        if (field == "msgs/sec" && parts[i] ~ /msgs\/sec/) { sub(/.*stats: /, "", parts[i]); split(parts[i], v, " "); printf "%s: %.0f %s\n", name, v[1], unit }
        else if (index(parts[i], field ": ") == 1) { split(parts[i], v, " "); sub(/us$/, "", v[2]); printf "%s: %.3g %s\n", name, v[2] * scale, unit }
      }
    }'
}

# publish MODE SUBJECT STREAM [nats bench flags...]: R3 file-storage publishes of
# 256-byte messages, as every NATS workload here makes them.
publish() {
  local mode=$1 subject=$2 stream=$3
  shift 3
  nats bench js pub "$mode" "$subject" --stream "$stream" --replicas 3 --storage file --size 256B --no-progress "$@"
}

# fetch STREAM [nats bench flags...]: consumers fetching 100 at a time.
fetch() {
  local stream=$1
  shift
  nats bench js fetch --stream "$stream" --batch 100 --no-progress "$@"
}

# run_nats SYNC PREFIX: every NATS workload, figures named PREFIX_*.
run_nats() {
  local sync=$1 p=$2
  start_nats "$sync"
  local out=$work/out
  publish async p.x produce --create --msgs 100000 --batch 256 >"$out" 2>&1
  figure ${p}_produce_rate msgs/sec msgs/s 1 <"$out"
  publish sync s.x sync --create --msgs 2000 >"$out" 2>&1
  figure ${p}_sync_publish_p50 P50 ms 0.001 <"$out"
  figure ${p}_sync_publish_p99 P99 ms 0.001 <"$out"
  fetch produce --clients 16 --doubleack --msgs 100000 >"$out" 2>&1
  figure ${p}_consume_confirmed_rate msgs/sec msgs/s 1 <"$out"
  publish async p2.x produce2 --create --msgs 100000 --batch 256 >/dev/null 2>&1
  fetch produce2 --clients 16 --msgs 100000 >"$out" 2>&1
  figure ${p}_consume_unconfirmed_rate msgs/sec msgs/s 1 <"$out"
  publish async m.x mixed --create --msgs 1 >/dev/null 2>&1
  fetch mixed --clients 4 --msgs 150001 >"$work/fetch" 2>&1 &
  local fetcher=$!
  publish async m.x mixed --msgs 150000 --clients 4 --batch 64 >"$out" 2>&1
  wait "$fetcher"
  figure ${p}_mixed_completed_rate msgs/sec msgs/s 1 <"$work/fetch"
  stop_nats
}

run_nats_always() { run_nats always nats; }
run_nats_lazy() { run_nats default nats_lazy; }

run_sepp() {
  bin/sepp bench --scenarios produce,latency,consume,mixed --e2e-duration 2s 2>/dev/null |
    grep -E '^(disk_fsync_p50|produce_rate|sync_enqueue_p50|sync_enqueue_p99|consume_rate|mixed_completed_rate):'
}

echo "# GOMAXPROCS: $server_procs for each server, $client_procs for the benchmark client (nats); sepp bench splits its own the same way"
for ((r = 1; r <= rounds; r++)); do
  order="sepp nats_always nats_lazy"
  ((r % 2 == 0)) && order="nats_lazy nats_always sepp"
  for which in $order; do
    echo "# round $r of $rounds: $which ($(date -u +%H:%M:%S))"
    "run_$which"
  done
done
