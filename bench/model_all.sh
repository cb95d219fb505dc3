#!/usr/bin/env bash
# bench/model_all.sh - `ringsim model --algo all` on 4,096 workers (issue
# 29's speed target: at most 2 s on this machine), each figure from runs
# made side by side.
#
#   bench/model_all.sh [RUNS] [RINGSIM]     defaults: 5, build/ringsim
#
# Runs `ringsim model --params examples/gpt2_small.json --topo
# dgx-h100,nodes=512 --algo all` RUNS times on every core (the text: its
# simulations spread over the cores) and, in turn, on one core (taskset -c
# 0), and prints each run's wall and CPU seconds (GNU time), the medians,
# and one core's wall over every core's, pair by pair; then one --json run
# (which also simulates every algorithm's prediction at each bucket size
# and crossover). Every run's output must be the first's (exit 1 if not).
# Not a test: timings on a shared machine vary; see docs/performance.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
ringsim=${2:-$root/build/ringsim}
[ -x "$ringsim" ] || { echo "model_all.sh: no $ringsim (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "model_all.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
command -v taskset > /dev/null || { echo "model_all.sh: needs taskset (util-linux)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(model --params "$root/examples/gpt2_small.json" --topo dgx-h100,nodes=512 --algo all)

# one LABEL [PREFIX...]: run once, append "wall cpu" to $tmp/LABEL
one() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" "$ringsim" "${args[@]}" > "$tmp/out"
  if [ -f "$tmp/first" ]; then
    cmp -s "$tmp/first" "$tmp/out" || { echo "model_all.sh: $label: output differs" >&2; exit 1; }
  else
    cp "$tmp/out" "$tmp/first"
  fi
  local wall cpu
  read -r wall cpu < <(awk '{print $1, $2 + $3}' "$tmp/t")
  echo "$wall $cpu" >> "$tmp/$label"
  printf '  %-10s wall %6.2f s   cpu %6.2f s\n' "$label" "$wall" "$cpu"
}

echo "# ringsim ${args[*]//$root\//}"
echo "# $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  one all-cores
  one one-core taskset -c 0
done
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for label in all-cores one-core; do
  printf '%-10s median wall %.2f s, cpu %.2f s\n' "$label" \
    "$(cut -d' ' -f1 "$tmp/$label" | median)" "$(cut -d' ' -f2 "$tmp/$label" | median)"
done
paste -d' ' "$tmp/one-core" "$tmp/all-cores" | awk '{print $1 / $3}' | median |
  xargs printf 'one core / all cores, wall, median of the pairs: %.2f\n'
/usr/bin/time -f "%e %U %S" -o "$tmp/t" "$ringsim" "${args[@]}" --json > /dev/null
read -r wall cpu < <(awk '{print $1, $2 + $3}' "$tmp/t")
printf -- '--json (every prediction too): wall %.2f s, cpu %.2f s\n' "$wall" "$cpu"
