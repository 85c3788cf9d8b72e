#!/usr/bin/env bash
# bench-ab.sh OLD_REV [ROUNDS] [-- sepp bench flags...]
#
# Compares two builds of sepp the way the README's round-to-round tables
# are made: a shared 2-core VM's speed drifts by a factor of two within an
# hour, so one run of each says little. This builds OLD_REV and the working
# tree the same way (static, -trimpath), runs `sepp bench` with each,
# alternately, ROUNDS times (the order flips every round, so neither always
# runs first), and prints each figure's values and means side by side.
#
#   scripts/bench-ab.sh a4d9b15 3 -- --scenarios produce,consume
#   make bench-ab OLD=a4d9b15 ROUNDS=3 BENCH_FLAGS='--scenarios produce,consume'
set -euo pipefail
cd "$(dirname "$0")/.."

old_rev=${1:?usage: scripts/bench-ab.sh OLD_REV [ROUNDS] [-- sepp bench flags...]}
shift
rounds=3
if [[ $# -gt 0 && $1 != "--" ]]; then
  rounds=$1
  shift
fi
[[ $# -gt 0 && $1 == "--" ]] && shift

work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

echo "building $old_rev and the working tree" >&2
git worktree add -q --detach "$work/old" "$old_rev"
(cd "$work/old" && CGO_ENABLED=0 go build -trimpath -o "$work/sepp-old" ./cmd/sepp)
CGO_ENABLED=0 go build -trimpath -o "$work/sepp-new" ./cmd/sepp

results="$work/results"
: >"$results"
for ((r = 1; r <= rounds; r++)); do
  order="old new"
  ((r % 2 == 0)) && order="new old"
  for which in $order; do
    echo "round $r of $rounds: $which" >&2
    # Only the figure lines ("name: value unit"), tagged with the build.
    "$work/sepp-$which" bench "$@" 2>/dev/null |
      awk -v w="$which" '/^[a-z][a-z0-9_-]*: -?[0-9.]+ / {sub(":", "", $1); print w, $1, $2, $3}' >>"$results" || true
  done
done

# One line per figure, in the order the bench printed them:
# figure, unit, old values and mean, new values and mean, change of the means.
awk '
  !($2 in seen) { seen[$2] = 1; order[++n] = $2; unit[$2] = $4 }
  { vals[$1, $2] = vals[$1, $2] (vals[$1, $2] == "" ? "" : " ") $3; sum[$1, $2] += $3; cnt[$1, $2]++ }
  function num(x) { return (x >= 100 || x <= -100) ? sprintf("%.0f", x) : sprintf("%.3g", x) }
  END {
    printf "%-40s %-8s %-34s %-34s %s\n", "figure", "unit", "'"$old_rev"' (mean)", "working tree (mean)", "change"
    for (i = 1; i <= n; i++) {
      f = order[i]
      if (cnt["old", f] == 0 || cnt["new", f] == 0) continue
      mo = sum["old", f] / cnt["old", f]; mn = sum["new", f] / cnt["new", f]
      ch = (mo != 0) ? sprintf("%+.1f%%", (mn - mo) / mo * 100) : ""
      printf "%-40s %-8s %-34s %-34s %s\n", f, unit[f], vals["old", f] " (" num(mo) ")", vals["new", f] " (" num(mn) ")", ch
    }
  }' "$results"
