#!/usr/bin/env bash
# Second-round device call: where the ~150 us per GPU operation goes
# (latency_probe.cu, alone and beside a second idle context), the staged
# path's slots x chunk on p2p bw, and the `gpu` ctest summary. Assumes
# jobs/gpu/device_build.sh (run here first). Details in $OUT/tune.tgz.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}; work=/tmp/tune; mkdir -p "$out" "$work"
export PATH=/usr/local/cuda/bin:$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$root/jobs/gpu/device_build.sh" "$root/build-device" >"$work/build.txt" 2>&1 || { cat "$work/build.txt"; exit 1; }
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
bin=$root/build-device/gdrbench
nvcc -O2 -arch=sm_90 -std=c++17 -o "$work/latency_probe" "$root/jobs/gpu/latency_probe.cu"
{
  for m in auto spin block; do "$work/latency_probe" $m; done
  echo "-- with a second, idle process holding a context on the GPU"
  "$work/latency_probe" auto 8 & sleep 3; "$work/latency_probe" auto; wait
} >"$work/probe.txt" 2>&1
mpi=(mpirun --oversubscribe --bind-to none -np 2)
for slots in 2 4 8; do for ch in 2M 4M 8M 16M; do
  GDR_STAGE_SLOTS=$slots GDR_STAGE_CHUNK=$ch timeout 60 "${mpi[@]}" "$bin" run -t bw,bibw -T mpi -m cuda \
    --path staged -b 256M -e 256M -n 6 -w 2 --window 8 --reference none --output "$work/s${slots}_$ch.h5" \
    --json "$work/s${slots}_$ch.jsonl" >"$work/s${slots}_$ch.txt" 2>&1
  printf "slots %s chunk %-4s " $slots $ch >>"$work/tune.txt"
  python3 -c "import json,sys; print('  '.join(f\"{r['test']} {r['algbw_gbps']:.2f} GB/s\" for r in map(json.loads, open(sys.argv[1]))))" "$work/s${slots}_$ch.jsonl" >>"$work/tune.txt" 2>&1
done; done
GDR_STAGE_SLOTS=4 GDR_STAGE_CHUNK=4M timeout 60 "${mpi[@]}" "$bin" run -t bw -T mpi -m host -b 256M -e 256M -n 6 -w 2 --window 8 \
  --reference none --json "$work/host.jsonl" --output "$work/host.h5" >"$work/host.txt" 2>&1
(cd "$root/build-device" && ctest -L gpu --timeout 150 >"$work/ctest.txt" 2>&1)
tar -C /tmp --exclude='*.h5' --exclude=latency_probe -czf "$out/tune.tgz" tune
cat "$work/probe.txt"; echo "== staged p2p over mpi, 256 MiB, window 8 =="; cat "$work/tune.txt"
echo "host mpi bw: $(grep -o '"algbw_gbps":[0-9.]*' "$work/host.jsonl")"
echo "== ctest -L gpu =="; grep -E "Test +#|tests passed|tests failed" "$work/ctest.txt"
