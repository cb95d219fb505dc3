#!/usr/bin/env bash
# bench/latency.sh - small all-reduces, where hand-offs between threads are
# the time: ringsim's ring against Open MPI's MPI_Allreduce, in one run.
# Each round runs `ringsim bench` and mpirun once per W, one after the
# other, so both see the same load; it prints the medians over the rounds
# and their ratio. Needs mpicc and mpirun (bench/mpi_compare.sh installs
# them). Not part of the test suite.
#
#   bench/latency.sh [-s SIZE] [-r ROUNDS] [-n ITERS] [W ...]
#       default: 8 bytes, 5 rounds, 200 iterations, W = 2 4 8 16
#   RINGSIM=path/to/ringsim picks the binary (default build/ringsim).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
size=8 rounds=5 iters=200
usage() {
  echo "usage: bench/latency.sh [-s SIZE] [-r ROUNDS] [-n ITERS] [W ...]" >&2
  exit 2
}
while getopts s:r:n:h opt; do
  case $opt in
  s) size=$OPTARG ;;
  r) rounds=$OPTARG ;;
  n) iters=$OPTARG ;;
  *) usage ;;
  esac
done
shift $((OPTIND - 1))
workers=("$@")
[ ${#workers[@]} -eq 0 ] && workers=(2 4 8 16)
for v in "$size" "$rounds" "$iters" "${workers[@]}"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || {
    echo "bench/latency.sh: '$v' is not a positive whole number" >&2
    exit 2
  }
done
ringsim=${RINGSIM:-$root/build/ringsim}
[ -x "$ringsim" ] || {
  echo "bench/latency.sh: no $ringsim: build first" >&2
  exit 2
}
command -v mpicc >/dev/null && command -v mpirun >/dev/null || {
  echo "bench/latency.sh: needs mpicc and mpirun (bench/mpi_compare.sh installs them)" >&2
  exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O3 -o "$tmp/mpi_allreduce" "$root/bench/mpi_allreduce.c"
mpirun_flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun_flags+=(--allow-run-as-root)

for W in "${workers[@]}"; do
  for _ in $(seq "$rounds"); do
    "$ringsim" bench -w "$W" -b "$size" -e "$size" -n "$iters" --warmup 10 \
      --json | /usr/bin/python3 -c \
      'import json,sys; j=json.load(sys.stdin); print("ring", j["time_us"], j["min_time_us"])'
    read -r _ mpi _ < <(mpirun "${mpirun_flags[@]}" -np "$W" \
      "$tmp/mpi_allreduce" "$size" "$iters" 10 2>/dev/null)
    echo "mpi $mpi"
  done >"$tmp/W$W"
done

printf '# %d B, %d rounds of %d iterations (after 10 warm-up); medians over the rounds, in us\n' \
  "$size" "$rounds" "$iters"
printf '# %6s %12s %12s %14s %12s\n' W ringsim "ringsim min" MPI_Allreduce ringsim/MPI
for W in "${workers[@]}"; do
  /usr/bin/python3 - "$W" "$tmp/W$W" <<'EOF'
import statistics, sys
ring, low, mpi = [], [], []
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] == "ring":
        ring.append(float(f[1]))
        low.append(float(f[2]))
    else:
        mpi.append(float(f[1]))
r, m = statistics.median(ring), statistics.median(mpi)
print("  %6s %12.1f %12.1f %14.1f %12.2f" % (sys.argv[1], r, statistics.median(low), m, r / m))
EOF
done
