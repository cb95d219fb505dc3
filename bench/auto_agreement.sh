#!/usr/bin/env bash
# bench/auto_agreement.sh - does --algo auto pick what `bench --algo all`
# finds fastest? One `ringsim bench --algo all` and one `ringsim bench
# --algo auto` over the same sizes, one after the other, and per size: auto's
# pick, the fastest by mean time (bench's *) and by fastest iteration, and
# the pick's time over the fastest's, both from the --algo all run.
# Not part of the test suite.
#
#   bench/auto_agreement.sh [W] [MINBYTES] [MAXBYTES] [FACTOR]
#   default: 4 workers, 8 B to 64M, each size 8 times the last
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
W=${1:-4}
lo=${2:-8}
hi=${3:-64M}
factor=${4:-8}
build="$root/build"
[ -x "$build/ringsim" ] || {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRINGSIM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/ringsim" bench -w "$W" -b "$lo" -e "$hi" -f "$factor" --algo all --json >"$tmp/all" 2>/dev/null
"$build/ringsim" bench -w "$W" -b "$lo" -e "$hi" -f "$factor" --algo auto --json >"$tmp/auto" 2>/dev/null
/usr/bin/python3 - "$tmp/all" "$tmp/auto" "$W" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
auto = [json.loads(l) for l in open(sys.argv[2])]
by_size = {}
for r in rows:
    by_size.setdefault(r["size"], {})[r["algo"]] = r
print(f"# W={sys.argv[3]}: auto's pick against `bench --algo all` (times in us, from the --algo all run)")
print(f"# {'size':>10} {'auto':>7} {'fastest':>8} {'by min':>7} {'pick/fastest':>13} {'pick/fastest(min)':>18}")
match = match_min = 0
for a in auto:
    algos = by_size[a["size"]]
    mean = min(algos, key=lambda k: algos[k]["time_us"])
    best = min(algos, key=lambda k: algos[k]["min_time_us"])
    pick = algos[a["chosen"]]
    match += a["chosen"] == mean
    match_min += a["chosen"] == best
    print(f"  {a['size']:>10} {a['chosen']:>7} {mean:>8} {best:>7} "
          f"{pick['time_us'] / algos[mean]['time_us']:>13.2f} "
          f"{pick['min_time_us'] / algos[best]['min_time_us']:>18.2f}")
print(f"# auto's pick was the fastest by mean time at {match} of {len(auto)} sizes, "
      f"by fastest iteration at {match_min} of {len(auto)}")
EOF
