#!/usr/bin/env bash
# bench/whole_command.sh - the whole ringsim command against its own
# all-reduce (issue 16, "Speed where users wait"): each ratio from one run.
#
#   bench/whole_command.sh [RINGSIM]       default: build/ringsim
#
# Prints, for each case, the command's wall time and peak RSS (GNU time)
# beside the all-reduce's wall time, the model's bytes and the phases
# (fill_ns, wall_ns, check_ns) from the same run's --json report:
#   gpt2-small, W=4:    whole / all-reduce wall, and
#                       peak RSS / ((W+1) x model bytes)
#   resnet18, W=256 (--init exact):  whole / all-reduce wall
# and beside each run the kernel's own cost of the same W buffers
# (bench/first_touch.c: fresh pages written once on every core, then once
# more), measured in the same state of memory: first touch / all-reduce is
# the floor of whole / all-reduce that no change in ringsim can go under.
#
# Each case runs twice, because on a virtual machine that state decides
# most of a big run's wall time:
#   cold   after COLD_WAIT seconds (default 20) with nothing running, when
#          the host has taken back the memory freed before (virtio-balloon
#          free page reporting: a page it must back again costs about 5 us
#          to touch here), as a user's first command meets it;
#   warm   right after a program freed as much memory, which the guest
#          still holds.
# (the cold floor is measured after another wait, the warm one right
# after the warm run.) SKIP_W256=1 leaves out the second case (about
# 12 GiB). Not a test: timings on a shared machine vary; see
# docs/performance.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ringsim=${1:-$root/build/ringsim}
[ -x "$ringsim" ] || { echo "whole_command.sh: no $ringsim (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "whole_command.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/first_touch" "$root/bench/first_touch.c"

# case NAME STATE W ARGS...: run once, print the ratios of that one run
case_() {
  local name=$1 state=$2 W=$3
  shift 3
  [ "$state" = cold ] && sleep "$cold_wait"
  /usr/bin/time -f '%e %M' -o "$tmp/time" \
    "$ringsim" --workers "$W" --no-trace --json "$@" >"$tmp/json"
  read -r whole_s rss_kb <"$tmp/time"
  local mib
  mib=$("$py" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(-(-int(sys.argv[2]) * r["bytes"] // 2**20))' \
          "$tmp/json" "$W")
  [ "$state" = cold ] && sleep "$cold_wait"
  read -r touch1_s touch2_s < <("$tmp/first_touch" "$mib")
  "$py" - "$name" "$W" "$whole_s" "$rss_kb" "$tmp/json" "$mib" "$touch1_s" "$touch2_s" "$state" <<'PY'
import json, sys
name, W, whole_s, rss_kb, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
mib, touch1, touch2, state = int(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8]), sys.argv[9]
r = json.load(open(path))
ring_s = r["wall_ns"] / 1e9
model = r["bytes"]  # one worker's gradients
rss = rss_kb * 1024
print(f"{name}: W={W}, {state} memory, status {r['status']}")
print(f"  whole command   {whole_s:8.2f} s wall, peak RSS {rss / 2**30:.2f} GiB")
fill_s, check_s = r["fill_ns"] / 1e9, r["check_ns"] / 1e9
print(f"  all-reduce      {ring_s:8.3f} s wall;  check {check_s:.3f} s on {r['check_threads']} threads")
print(f"  phases: grads {fill_s:.2f} s, all-reduce {ring_s:.2f} s, check {check_s:.2f} s, "
      f"the rest {whole_s - fill_s - ring_s - check_s - r['ref_ns'] / 1e9:.2f} s")
print(f"  whole / all-reduce wall        {whole_s / ring_s:6.2f}")
print(f"  peak RSS / ((W+1) x {model / 2**20:.1f} MiB) {rss / ((W + 1) * model):6.3f}")
print(f"  first touch of {mib} MiB (the W buffers, {state}) {touch1:6.2f} s wall; written again {touch2:.2f} s")
print(f"  floor: first touch / all-reduce   {touch1 / ring_s:6.2f}")
PY
}

cold_wait=${COLD_WAIT:-20}
for state in cold warm; do
  case_ gpt2-small "$state" 4 --params "$root/examples/gpt2_small.json"
done
if [ "${SKIP_W256:-0}" != 1 ]; then
  for state in cold warm; do
    case_ resnet18 "$state" 256 --params "$root/examples/resnet18.json" --init exact
  done
fi
