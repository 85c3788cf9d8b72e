#!/usr/bin/env bash
# deps.sh: what sepp's dependencies have released since sepp took them.
#
#   scripts/deps.sh        (make deps; CI prints it and ignores its verdict)
#
# 1. The direct modules of go.mod with a newer release (go list -m -u).
# 2. For each vendored fork (third_party/*/*/SEPP-PATCH.md with a line
#    "sepp-fork-base: MODULE VERSION"): the versions the module proxy lists
#    above that base, and the next patch and minor versions probed by name,
#    because the proxy's list can omit releases (it listed only v0.4.0 of
#    raft-wal while v0.4.2 downloaded by name). For a newer version that
#    downloads and ships a CHANGELOG.md, its entries above the base.
#
# A fork sat two years behind a data-loss fix of its upstream once
# (hashicorp/raft-wal#31); this report is there so that is seen. It never
# fails: it reports. Lookups go through the go command, to the module proxy.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

echo "== direct modules with a newer release (go list -m -u)"
# A scratch module so that lookups never touch sepp's go.mod or go.sum.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# -e: a module whose version list the proxy refuses (some of the forks' test
# dependencies) is counted, not fatal.
updates=$(go list -m -u -e -f '{{if and (not .Indirect) (not .Main) .Update}}{{.Path}} {{.Version}} -> {{.Update.Version}}{{end}}' all 2>"$scratch/list.err" | grep -v '^$')
if [[ -n $updates ]]; then
  echo "$updates"
else
  echo "none"
fi
if [[ -s $scratch/list.err ]]; then
  echo "($(grep -c 'reading https' "$scratch/list.err") lookups refused by the proxy while listing; not direct modules of sepp unless named above)"
fi
(cd "$scratch" && go mod init deps-scratch >/dev/null 2>&1)

# available MODULE VERSION: prints the version's directory if it downloads.
available() {
  (cd "$scratch" && go mod download -json "$1@$2" 2>/dev/null) |
    awk -F'"' '/"Error"/ {err = 1} /"Dir"/ {dir = $4} END {if (!err && dir != "") print dir}'
}

# newer A B: true when version A sorts after B (semver, without pre-releases).
newer() { [[ $1 != "$2" && $(printf '%s\n%s\n' "${1#v}" "${2#v}" | sort -V | tail -1) == "${1#v}" ]]; }

echo
echo "== vendored forks against upstream"
found=0
for patch in third_party/*/*/SEPP-PATCH.md; do
  [[ -f $patch ]] || continue
  line=$(grep -m1 '^sepp-fork-base: ' "$patch") || {
    echo "$patch: no 'sepp-fork-base: MODULE VERSION' line"
    continue
  }
  found=1
  read -r _ mod base <<<"$line"
  echo "-- $mod: fork base $base ($(dirname "$patch"))"
  listed=$(cd "$scratch" && go list -m -versions "$mod" 2>/dev/null | cut -d' ' -f2-)
  above=()
  for v in $listed; do newer "$v" "$base" && above+=("$v"); done
  echo "   proxy lists: ${listed:-nothing}"
  # The next versions by name: three patches, the next two minors, the next major.
  IFS=. read -r major minor patchv <<<"${base#v}"
  probes=("v$major.$minor.$((patchv + 1))" "v$major.$minor.$((patchv + 2))" "v$major.$minor.$((patchv + 3))"
    "v$major.$((minor + 1)).0" "v$major.$((minor + 1)).1" "v$major.$((minor + 2)).0" "v$((major + 1)).0.0")
  for v in "${probes[@]}"; do
    if [[ " ${above[*]} " != *" $v "* ]] && [[ -n $(available "$mod" "$v") ]]; then
      above+=("$v")
      echo "   $v downloads by name (not in the proxy's list)"
    fi
  done
  if ((${#above[@]} == 0)); then
    echo "   up to date: nothing newer than $base found"
    continue
  fi
  newest=$(printf '%s\n' "${above[@]}" | sed 's/^v//' | sort -V | tail -1)
  echo "   NEWER than the fork's base: $(printf '%s\n' "${above[@]}" | sed 's/^v//' | sort -V | sed 's/^/v/' | tr '\n' ' ')"
  dir=$(available "$mod" "v$newest")
  if [[ -n $dir && -f $dir/CHANGELOG.md ]]; then
    echo "   v$newest CHANGELOG.md, entries newer than ${base}:"
    # Up to the first release heading that is not newer than the base.
    awk -v base="${base#v}" '
      function cmp(a, b,   x, y, i) { split(a, x, "."); split(b, y, "."); for (i = 1; i <= 3; i++) if (x[i] + 0 != y[i] + 0) return x[i] + 0 < y[i] + 0 ? -1 : 1; return 0 }
      /^#+ *\[?v?[0-9]+\.[0-9]+\.[0-9]+/ { v = $0; sub(/^#+ *\[?v?/, "", v); sub(/[^0-9.].*/, "", v); if (cmp(v, base) <= 0) exit }
      NF { print "     " $0 }' "$dir/CHANGELOG.md" | head -30
  fi
done
((found)) || echo "no fork has a sepp-fork-base line"
cd "$root"
exit 0
