#!/usr/bin/env bash
# Does the CPU a rank runs on explain the two levels device bw swings between
# (the 1-8 MiB swing of bw against ucx_perftest)? On the GPU machine, one call: the NUMA layout and the GPU's CPU
# affinity, then under CUDA MPS UCX direct bw at 1-8 MiB and ucx_perftest
# tag_bw at 1 MiB, three times each with both processes pinned to the GPU's
# NUMA node, to the other node, and unpinned.
# usage: jobs/gpu/numa_probe.sh   (after device_build.sh; uses its UCX)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
# The whole script runs under CUDA MPS: jobs/with_mps.sh starts the daemon, runs this
# script again inside it, and stops the daemon however it ends.
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || exec "$root/jobs/with_mps.sh" bash "$0" "$@"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$root/build-device/gdrbench" ] || "$root/jobs/gpu/device_build.sh" "$root/build-device" >/dev/null || exit 1
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
lscpu | grep -iE "numa|socket|model name"
nvidia-smi topo -m | head -4
near=$(nvidia-smi topo -m | awk '/^GPU0/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+-[0-9]+(,[0-9]+-[0-9]+)*$/) {print $i; exit}}')
nodes=$(ls -d /sys/devices/system/node/node* | wc -l)
far=
for n in /sys/devices/system/node/node*; do
  c=$(cat "$n/cpulist"); [ "$c" != "$near" ] && far=$c
done
echo "GPU0 near CPUs: ${near:-?}; other: ${far:-none}; nodes: $nodes"
w=$(mktemp -d)
run() {  # LABEL CPUS ('' = unpinned)
  local pin=(); [ -n "$2" ] && pin=(taskset -c "$2")
  mpirun -q --oversubscribe --bind-to none -x LD_LIBRARY_PATH -np 2 "${pin[@]}" "$root/build-device/gdrbench" run \
    -T ucx -m cuda --path direct -t bw -b 1M -e 8M -f 2 --reference none --case-time 0.5 --json "$w/$1.jsonl" >/dev/null 2>&1
  local pt
  "${pin[@]}" $ucx_bin/ucx_perftest -p 13388 >/dev/null 2>&1 & sleep 0.5
  pt=$("${pin[@]}" $ucx_bin/ucx_perftest 127.0.0.1 -p 13388 -t tag_bw -m cuda -s 1048576 -n 20000 -w 2000 2>&1 |
       awk '/Final/ {printf "%.0f", $6 * 1048576 / 1e9}'); wait
  echo "$1 gdrbench bw GB/s: $(grep -o '"bytes":[0-9]*\|"algbw_gbps":[0-9.]*' "$w/$1.jsonl" | paste -sd' ' | sed 's/"bytes"://g; s/"algbw_gbps"://g')  | ucx_perftest 1 MiB: $pt"
}
for k in 1 2 3; do
  run near$k "$near"
  [ -n "$far" ] && run far$k "$far"
  run free$k ""
done
