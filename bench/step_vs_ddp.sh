#!/usr/bin/env bash
# bench/step_vs_ddp.sh - ringsim step's predicted training step against real
# PyTorch DDP on gloo (W = 2 processes on this machine) for three models and
# two bucket caps: predicted over measured per case (bench/step_vs_ddp.py
# says how each is obtained). Installs Debian's python3-torch if missing
# (root or sudo). Not part of the test suite: the figures are this
# machine's, and it is shared and noisy.
#
#   bench/step_vs_ddp.sh [ITERATIONS]     (default 20 steps per case)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if ! /usr/bin/python3 -c "import torch.distributed" 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    python3-torch >/dev/null
fi
build="$root/build"
[ -x "$build/ringsim" ] || {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRINGSIM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
}
exec /usr/bin/python3 "$root/bench/step_vs_ddp.py" "$build/ringsim" --iterations "${1:-20}"
