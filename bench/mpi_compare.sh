#!/usr/bin/env bash
# bench/mpi_compare.sh - ringsim (--algo auto, and the ring) against Open
# MPI's MPI_Allreduce with the same number of processes on this machine,
# measured in one run, per size: auto's time over MPI's (<= 1: auto is no
# slower) and the algorithm auto chose.
# Installs Debian's openmpi-bin and libopenmpi-dev if missing (root or sudo).
# Not part of the test suite: for users who want to see the comparison.
#
#   bench/mpi_compare.sh [W] [SIZES...]
#   default: 4 workers, 8 B to 64M, each size 8 times the last
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
W=${1:-4}
shift || true
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(8 64 512 4K 32K 256K 2M 16M 64M)
iters=${ITERS:-20}
warmup=${WARMUP:-5}

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    openmpi-bin libopenmpi-dev >/dev/null
fi
build="$root/build"
[ -x "$build/ringsim" ] || {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRINGSIM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O3 -o "$tmp/mpi_allreduce" "$root/bench/mpi_allreduce.c"

bytes_of() {
  local s=$1 n=${1%[KMG]}
  case "$s" in *K) echo $((n << 10)) ;; *M) echo $((n << 20)) ;; *G) echo $((n << 30)) ;; *) echo "$s" ;; esac
}

mpirun_flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun_flags+=(--allow-run-as-root)
printf '# W=%d, %d timed iterations after %d warm-up; times in us, sum of floats; ring in NCCL'"'"'s slice loop;\n' \
  "$W" "$iters" "$warmup"
printf '# auto: the algorithm the alpha-beta model predicts fastest (this machine measured by each ringsim bench)\n'
printf '# %12s %12s %12s %-7s %14s %10s %10s\n' size ring auto chosen MPI_Allreduce \
  "auto/MPI" "ring/MPI"
field() { /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
for s in "${sizes[@]}"; do
  bytes=$(bytes_of "$s")
  ring=$("$build/ringsim" bench --workers "$W" -b "$bytes" -e "$bytes" -n "$iters" \
           --warmup "$warmup" --json | field time_us)
  auto_json=$("$build/ringsim" bench --workers "$W" -b "$bytes" -e "$bytes" -n "$iters" \
           --warmup "$warmup" --json --algo auto)
  auto=$(field time_us <<<"$auto_json")
  chosen=$(field chosen <<<"$auto_json")
  read -r _ mpi wrong < <(mpirun "${mpirun_flags[@]}" -np "$W" "$tmp/mpi_allreduce" \
                            "$bytes" "$iters" "$warmup" 2>/dev/null)
  awk -v b="$bytes" -v r="$ring" -v a="$auto" -v c="$chosen" -v m="$mpi" -v w="$wrong" 'BEGIN {
    printf "  %12d %12.1f %12.1f %-7s %14.1f %10.2f %10.2f%s\n", b, r, a, c, m, a / m, r / m,
      (w == 0 ? "" : "  (MPI wrong: " w ")") }'
done
