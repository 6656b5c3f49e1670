#!/usr/bin/env bash
# What sets the two levels of the 1-16 MiB device bw rows (2 ranks, one GPU, -T ucx over
# cuda_ipc)? One call of the lent machine (about 4 minutes, build included):
#
#   bash jobs/gpu/two_levels_probe.sh        (carry .device/gpu; GDR_UCX=wheel|tarball)
#
# LAUNCHES launches (default 6) of each of two shapes in ABBA order, without MPS and then under
# it: "osu" (the default iterations, OSU's 20 windows of 64 at these sizes) and "long" (LONG_N,
# default 400, windows: 20 x the work). The GPU's SM and memory clocks and its pstate are
# sampled every 100 ms beside them. Per-iteration times are in the HDF5 files, so both the
# spread inside one launch and the spread between launches can be read. The clocks are
# read only: the machine's settings are left as they are.
# Output under $OUT/two-levels: per launch .jsonl/.h5/.txt, clocks.csv, and summary.txt
# (jobs/gpu/two_levels_table.py).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}/two-levels
mkdir -p "$out"
ucx=${GDR_UCX:-wheel}
build=$root/build-device-$ucx
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
GDR_UCX=$ucx timeout 200 "$root/jobs/gpu/device_build.sh" "$build" >"$out/build.log" 2>&1 ||
  { stamp "build failed: $(tail -3 "$out/build.log")"; exit 1; }
stamp built
. "$root/jobs/gpu/ucx_env.sh" "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
n=${LAUNCHES:-6} long=${LONG_N:-400}
timeout 400 nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,temperature.gpu \
  --format=csv,noheader -lms 100 >"$out/clocks.csv" 2>&1 &
smi=$!

one() {  # VARIANT SHAPE LAUNCH
  local name=$1-$2-$3 args=() x=(-x LD_LIBRARY_PATH)
  [ "$2" = long ] && args=(-n "$long" -w 40)
  [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && x+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
  echo "$(date +%s.%N) start $name" >>"$out/launches.txt"
  timeout 60 mpirun -q --oversubscribe --bind-to none -np 2 "${x[@]}" "$root/jobs/gpu/pin_ranks.sh" \
    "$root/build-device-$ucx/gdrbench" run -T ucx -m cuda --path direct -t bw -b 1M -e 16M -f 4 \
    "${args[@]}" --output "$out/$name.h5" --json "$out/$name.jsonl" >"$out/$name.txt" 2>&1
  echo "$(date +%s.%N) end $name rc=$?" >>"$out/launches.txt"
}
variant() {  # VARIANT
  local i
  for i in $(seq 1 "$n"); do
    if (( i % 2 )); then one "$1" osu "$i"; one "$1" long "$i"; else one "$1" long "$i"; one "$1" osu "$i"; fi
  done
  stamp "$1: $n launches of each shape"
}
variant no-mps
export -f one variant stamp
export root out ucx n long t0
"$root/jobs/with_mps.sh" bash -c 'variant mps' || stamp "with_mps.sh failed"
kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
/usr/bin/env python3 "$root/jobs/gpu/two_levels_table.py" "$out" | tee "$out/summary.txt"
