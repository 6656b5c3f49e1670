#!/usr/bin/env bash
# One device call for the GPU issue: build, doctor, the sweep the issue asks
# for (-t allreduce,latency,bw,bibw -T ucx,mpi -m host,cuda --path
# direct,staged --reference copy, 4 B .. 1 GiB) at NP ranks on the one GPU,
# then the 8 B device latency and a large allreduce again under MPS (if the
# machine has it) to show what the inter-process context switch costs.
# Writes HDF5 + JSON Lines under $OUT; prints a short table last.
# usage: jobs/gpu/full_sweep.sh NP [extra run options]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
np=${1:-2}; shift || true
OUT=${OUT:-/tmp/gdr-out}; mkdir -p "$OUT"
cd "$root"
bash jobs/gpu/device_build.sh "$root/build-device" || exit 1
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bin=$root/build-device/gdrbench
m=(mpirun -q --oversubscribe --bind-to none -np "$np" -x LD_LIBRARY_PATH)
stamp=$(date -u +%Y%m%dT%H%M%S)
if [ ! -s "$OUT/doctor-h200.json" ]; then
  "$bin" doctor -o "$OUT/doctor-h200.json" > "$OUT/doctor-h200.txt" 2>&1
  echo "doctor exit $?"; nvidia-smi topo -m > "$OUT/nvidia-smi-topo.txt" 2>&1
fi
name=${stamp}_h200_${np}r
timeout 300 "${m[@]}" "$bin" run -t allreduce,latency,bw,bibw -T ucx,mpi -m host,cuda \
  --path direct,staged --reference copy -b 4 -e 1G -f 4 -n "${ITERS:-10}" -w 2 --timeout 60 \
  --output "$OUT/$name.h5" --json "$OUT/$name.jsonl" "$@" > "$OUT/$name.txt" 2>&1
echo "sweep exit $?"
# The same GPU operations with MPS: do the ~150 us per step come from the
# GPU switching between the two processes' contexts?
if command -v nvidia-cuda-mps-control >/dev/null && [ "$np" = 2 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    m+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
    timeout 100 "${m[@]}" "$bin" run -t allreduce,latency,bw -T ucx -m cuda --path direct,staged \
      --reference copy -b 8 -e 1G -f 32 -n 10 -w 2 --timeout 60 \
      --output "$OUT/${name}_mps.h5" --json "$OUT/${name}_mps.jsonl" > "$OUT/${name}_mps.txt" 2>&1
    echo "mps sweep exit $?"
    echo quit | nvidia-cuda-mps-control
  else
    echo "MPS did not start"
  fi
fi
/usr/bin/env python3 "$root/jobs/gpu/full_sweep_table.py" "$OUT"/*.jsonl
