#!/usr/bin/env bash
# One call on the GPU machine: build, the `gpu` tests, then measurements;
# details go under $OUT, a short table is printed last.
#
# usage: jobs/gpu/gpu_suite.sh [tests|measure|gate [wheel|tarball]|all]   (default all)
#   all = tests, then the gate on both UCX builds; exit non-zero when any part fails.
#   gate UCX: jobs/gpu/bench_vs_peers.sh gpu built against that UCX (wheel: 1.22, tarball:
#   1.13.1), 2 ranks on one GPU, without and with MPS, paired ABBA rounds against ucx_perftest
#   added one at a time until every target of docs/gpu-gate.md is resolved, ROUND_CAP (16)
#   rounds or BUDGET_S (520 s, build included) ends it; exits 1 only on a target shown missed,
#   a device row without an established path or %peak, or missing output. About 9 minutes:
#   one call of the lent machine each (`gate wheel`, `gate tarball`). DRY_RUN=1 prints every
#   command it would run, its rounds on a simulated clock (bench_vs_peers.sh's DRY_* knobs).
#   measure: latency_probe.cu (what one GPU operation costs, alone and beside a second context),
#   the staged chunk sweep, the main sweep, copy ceilings, NCCL at 1 rank.
#   GDR_CHUNKS="256K 1M 4M"  staged chunk sizes to sweep (p2p bw, staged over mpi; measure)
#   GDR_MAX=256M             largest p2p/allreduce size of the main sweep (measure)
set -u
what=${1:-all}
root=$(cd "$(dirname "$0")/../.." && pwd)
# The gate: one UCX build, its own build folder, its own $OUT/gate-UCX folder.
gate() {
  local ucx=$1
  mkdir -p "${OUT:-/tmp/gdr-out}/gate-$ucx"
  OUT=${OUT:-/tmp/gdr-out}/gate-$ucx GDR_UCX=$ucx GDR_BUILD=$root/build-device-$ucx \
    BUDGET_S=${BUDGET_S:-520} bash "$root/jobs/gpu/bench_vs_peers.sh" gpu
}
case $what in
  gate) gate "${2:-wheel}"; exit $? ;;
  all) rc=0; bash "$0" tests || rc=1; gate wheel || rc=1; gate tarball || rc=1; exit $rc ;;
  tests|measure) ;;
  *) echo "usage: jobs/gpu/gpu_suite.sh [tests|measure|gate [wheel|tarball]|all]" >&2; exit 2 ;;
esac
out=${OUT:-/tmp/gdr-out}
mkdir -p "$out"
build=$root/build-device
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*"; }

{
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  mpirun --version | head -1
  ls /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1
  for h in CLI/CLI.hpp fmt/format.h hwloc.h gtest/gtest.h; do
    echo "#include <$h>" | g++ -std=c++20 -E -x c++ - >/dev/null 2>&1 && echo "have $h" || echo "missing $h"
  done
  python3 --version 2>&1
} >"$out/probe.txt" 2>&1
stamp "probe: $(tr "\n" ";" <"$out/probe.txt")"

# The GPU tests run these two; the rest of the test binaries run in CI.
GDR_DEVICE_TARGETS=${GDR_DEVICE_TARGETS:-"gdrbench gdr_dmabuf_probe"} \
  "$root/jobs/gpu/device_build.sh" "$build" || exit 1
stamp "built"
bin=$build/gdrbench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$root/jobs/gpu/ucx_env.sh" "$build"
"$bin" list >"$out/list.txt" 2>&1; grep -E "^  (cuda|ucx|mpi) " "$out/list.txt"
mpi=(mpirun --oversubscribe --bind-to none)

if [ "$what" = tests ]; then
  ctest --test-dir "$build" -L gpu --output-on-failure --timeout 240 >"$out/ctest_gpu.txt" 2>&1 || tests_rc=1
  stamp "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$out/ctest_gpu.txt")"
  grep -E "^ *[0-9]+/[0-9]+ Test" "$out/ctest_gpu.txt"
fi

# JSON Lines -> "name size value" rows for the table.
pick() {  # file, field (busbw_gbps|algbw_gbps|time_us_mean)
  python3 - "$1" "$2" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    name = f"{r['test']}/{r['transport']}/{r['mem']}/{r['path']}" + ("/ref" if r['reference'] else "")
    print(f"{name:34s} {r['bytes']:>11d} {r[sys.argv[2]]!s:>10s}  wrong={r['wrong']}")
EOF
}

if [ "$what" = measure ]; then
  max=${GDR_MAX:-256M}
  # 0. What one GPU operation costs here: alone, then beside a second, idle context.
  if nvcc -O2 -arch=sm_90 -std=c++17 -o "$build/latency_probe" "$root/jobs/gpu/latency_probe.cu" >"$out/latency_probe.txt" 2>&1; then
    { for m in auto spin block; do "$build/latency_probe" $m; done
      echo "-- with a second, idle process holding a context on the GPU"
      "$build/latency_probe" auto 8 & sleep 3; "$build/latency_probe" auto; wait; } >>"$out/latency_probe.txt" 2>&1
  fi
  stamp "latency probe: $(grep -c . "$out/latency_probe.txt") lines in \$OUT/latency_probe.txt"
  # 1. The staged chunk size: p2p bw over mpi on device memory per chunk size.
  for ch in ${GDR_CHUNKS:-256K 1M 4M 16M}; do
    GDR_STAGE_CHUNK=$ch timeout 120 "${mpi[@]}" -np 2 "$bin" run -t bw,allreduce -T mpi -m cuda --path staged \
      -b 1M -e "$max" -f 4 -n 5 -w 2 --window 8 --chunk 4M --reference none \
      --output "$out/chunk_$ch.h5" --json "$out/chunk_$ch.jsonl" >"$out/chunk_$ch.txt" 2>&1
    stamp "stage chunk $ch: rc $?"
  done
  # 2. The main comparison, 2 ranks on the one GPU, each transport on its own
  #    (a transport named with -T that cannot do a path stops the run).
  common=(-t allreduce,latency,bw,bibw -b 8 -e "$max" -f 4 -n 10 -w 3 --window 8)
  timeout 200 "${mpi[@]}" -np 2 "$bin" run "${common[@]}" -T mpi -m host,cuda --path staged \
    --reference mpi --output "$out/main_mpi.h5" --json "$out/main_mpi.jsonl" \
    >"$out/main_mpi.txt" 2>&1
  stamp "main mpi: rc $?"
  timeout 200 "${mpi[@]}" -np 2 "$bin" run "${common[@]}" -T ucx -m host,cuda --path direct,staged \
    --reference none --output "$out/main_ucx.h5" --json "$out/main_ucx.jsonl" \
    >"$out/main_ucx.txt" 2>&1
  stamp "main ucx: rc $?"
  # The copy ceilings: one copy at a time per rank (transports defaulted, so
  # lanes that cannot run on device memory are skipped with a note).
  timeout 120 "${mpi[@]}" -np 2 "$bin" run -t bw -m cuda --path direct -b 1M -e "$max" -f 4 -n 10 -w 3 \
    --window 8 --reference copy-d2d,copy-d2h,copy-h2d --output "$out/copy.h5" --json "$out/copy.jsonl" \
    >"$out/copy.txt" 2>&1
  stamp "copy references: rc $?"
  timeout 60 "${mpi[@]}" -np 1 "$bin" run -t allreduce -m cuda --path direct -b 1M -e "$max" -f 4 -n 10 -w 3 \
    --reference nccl --output "$out/nccl_np1.h5" --json "$out/nccl_np1.jsonl" >"$out/nccl_np1.txt" 2>&1
  stamp "nccl np1: rc $?"

  echo
  echo "== staged chunk sweep (bw algbw GB/s; allreduce busbw GB/s) =="
  for ch in ${GDR_CHUNKS:-256K 1M 4M 16M}; do
    [ -s "$out/chunk_$ch.jsonl" ] || continue
    echo "-- chunk $ch"
    paste <(pick "$out/chunk_$ch.jsonl" algbw_gbps | grep '^bw' | awk '{print $2, $3}') \
          <(pick "$out/chunk_$ch.jsonl" busbw_gbps | grep '^allreduce' | awk '{print $3}')
  done
  for f in main_mpi main_ucx copy nccl_np1; do
    [ -s "$out/$f.jsonl" ] || { echo "== $f: no results"; tail -5 "$out/$f.txt"; continue; }
    echo "== $f: allreduce busbw, bw/bibw algbw GB/s, latency us =="
    pick "$out/$f.jsonl" busbw_gbps | grep '^allreduce' | awk '$2 >= 1048576'
    pick "$out/$f.jsonl" algbw_gbps | grep -E '^(bw|bibw)' | awk '$2 >= 1048576'
    pick "$out/$f.jsonl" time_us_mean | grep '^latency' | awk '$2 <= 4096'
  done
fi
stamp "done"
exit ${tests_rc:-0}
