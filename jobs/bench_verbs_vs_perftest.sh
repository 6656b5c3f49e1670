#!/usr/bin/env bash
# Benchmark (not a test) of the verbs transport against perftest: in ONE Soft-RoCE guest boot
# (tests/softroce/vm.sh), each gdrbench verbs mode beside the perftest tool of
# the same shape, on the same rxe devices and sizes, REPEAT times; then, on
# the host, our value over perftest's per size and repeat, and the spread.
#
# Like with like (transports/verbs/README.md#modes):
#   bw:      ib_write_bw <-> --verbs-mode write; ib_send_bw <-> --verbs-mode imm
#   latency: ib_write_lat <-> --verbs-mode poll; ib_send_lat <-> --verbs-mode imm
# Targets (perftest's level): each bw mode from 1 MiB up >= 0.9 x its peer; 8-byte
# latency of each mode <= 1.2 x its peer (median against perftest's typical).
# Ratios only: software RDMA (rxe) under qemu TCG emulation. With FASTPATHS=1
# each fast path is also measured off against on (same shape, back to back).
#
#  - devices: perftest server on rxe0, client on rxe1 (GID index 0, link-local,
#    RoCE v2; out-of-band TCP over 127.0.0.1); gdrbench rank 0 on rxe1, rank 1
#    on rxe0 (GDR_VERBS_HCA), so data crosses the veth pair rxe1 -> rxe0 in both.
#  - window: perftest --tx-depth = gdrbench --window = $WINDOW (default 16, not
#    perftest's 128 / gdrbench's 64: rxe under emulation moves ~10 MB/s).
#  - messages: perftest -n = gdrbench bw iterations x window (same count timed).
#  - bw: perftest "BW average[MB/sec]" is MiB/s (2^20 B, per its --help) ->
#    x 2^20 / 1e9 = GB/s; gdrbench: bytes / mean time per message (slowest
#    rank), the same total-bytes-over-total-time average.
#  - latency: both one-way (round trip / 2). Target on the median: perftest
#    t_typical vs gdrbench's median iteration.
#
#  - two nodes (--nodes 2): two guests joined by a qemu UDP link on 127.0.0.1
#    (tests/softroce/two_nodes.sh); perftest server in node2, client in node1,
#    rxe0 on eth0 in both, GID index 0 (link-local); gdrbench rank 0 in node1.
#  - order: ABBA over repeats (odd: perftest first; even: gdrbench first).
#  - load: the host's 1-minute load average, sampled every 10 s during the
#    guest run (the machine is shared), is printed with the table.
#
# Usage: jobs/bench_verbs_vs_perftest.sh [--nodes 1|2]   (env: WINDOW BW_ITERS LAT_ITERS
#        BW_MIN BW_MAX BW_FACTOR LAT_MIN LAT_MAX LAT_FACTOR REPEAT FASTPATHS
#        FP_LAT_SIZE FP_BW_SIZE FP_BIG_SIZE GUEST_TIMEOUT GDRBENCH_BUILD
#        PARTS="lat bw": which pairs run, both by default; BIND=none|core: mpirun's
#        --bind-to for gdrbench, none by default as perftest's processes are not bound)
# Raw guest outputs: <build>/bench-verbs-vs-perftest/<UTC time>/raw/rep<R>/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
nodes=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) nodes=${2:-}; shift 2 || { echo "bench_verbs_vs_perftest: --nodes wants 1 or 2" >&2; exit 2; } ;;
    *) echo "bench_verbs_vs_perftest: unknown argument '$1' (usage: [--nodes 1|2])" >&2; exit 2 ;;
  esac
done
[[ $nodes == 1 || $nodes == 2 ]] || { echo "bench_verbs_vs_perftest: --nodes wants 1 or 2, got '$nodes'" >&2; exit 2; }
build=${GDRBENCH_BUILD:-$top/build}
[[ -x $build/gdrbench ]] || { echo "no $build/gdrbench (set GDRBENCH_BUILD)" >&2; exit 2; }
WINDOW=${WINDOW:-16} BW_ITERS=${BW_ITERS:-3} LAT_ITERS=${LAT_ITERS:-300}
BW_MIN=${BW_MIN:-65536} BW_MAX=${BW_MAX:-4194304} BW_FACTOR=${BW_FACTOR:-4}
LAT_MIN=${LAT_MIN:-8} LAT_MAX=${LAT_MAX:-512} LAT_FACTOR=${LAT_FACTOR:-64}
REPEAT=${REPEAT:-2} FASTPATHS=${FASTPATHS:-1} PARTS=${PARTS:-lat bw} GUEST_TIMEOUT=${GUEST_TIMEOUT:-1500}
FP_LAT_SIZE=${FP_LAT_SIZE:-8} FP_BW_SIZE=${FP_BW_SIZE:-4096} FP_BIG_SIZE=${FP_BIG_SIZE:-1048576}
sweep() { local s=$1 out=; while ((s <= $2)); do out+="$s "; s=$((s * $3)); done; echo "${out% }"; }
bw_sizes=$(sweep "$BW_MIN" "$BW_MAX" "$BW_FACTOR")
lat_sizes=$(sweep "$LAT_MIN" "$LAT_MAX" "$LAT_FACTOR")

res=$build/bench-verbs-vs-perftest/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$res/raw"
# A private copy of the binary: a rebuild of $build during the run can't swap it.
cp "$build/gdrbench" "$res/gdrbench"
echo "results: $res"
start=$(date +%s)
envs=(--env "BW_SIZES=$bw_sizes" --env "BW_FACTOR=$BW_FACTOR"
  --env "LAT_SIZES=$lat_sizes" --env "LAT_FACTOR=$LAT_FACTOR" --env "REPEAT=$REPEAT" --env "PARTS=$PARTS"
  --env "FASTPATHS=$FASTPATHS" --env "FP_LAT_SIZE=$FP_LAT_SIZE" --env "FP_BW_SIZE=$FP_BW_SIZE" --env "FP_BIG_SIZE=$FP_BIG_SIZE"
  --env "WINDOW=$WINDOW" --env "BW_ITERS=$BW_ITERS" --env "LAT_ITERS=$LAT_ITERS" --env "NODES=$nodes"
  --env "BIND=${BIND:-none}")
guest=(bash "$top/tests/softroce/bench_guest.sh" /results/raw /results/gdrbench)
# The host's load while the guests run (the machine is shared).
(while :; do echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg)"; sleep 10; done) >"$res/load.txt" &
load_pid=$!
set +e
if [[ $nodes == 2 ]]; then
  "$top/tests/softroce/two_nodes.sh" --build "$build" --results "$res" --timeout "$GUEST_TIMEOUT" \
    "${envs[@]}" --command -- "${guest[@]}" 2>&1 | tee "$res/guest-output.txt"
else
  "$top/tests/softroce/vm.sh" --share "$res" --timeout "$GUEST_TIMEOUT" "${envs[@]}" -- "${guest[@]}" \
    2>&1 | tee "$res/guest-output.txt"
fi
rc=${PIPESTATUS[0]}
set -e
kill "$load_pid" 2>/dev/null || true
echo "guest run: exit $rc, $(( $(date +%s) - start )) s wall (boot included)"

py=
for p in /usr/bin/python3 python3; do "$p" -c 'import h5py' 2>/dev/null && { py=$p; break; }; done
[[ -n $py ]] || { echo "no python3 with h5py (apt-get install python3-h5py)" >&2; exit 2; }
"$py" "$top/jobs/bench_verbs_table.py" "$res/raw" "$bw_sizes" "$lat_sizes" "$WINDOW" "$REPEAT" \
  "$FP_LAT_SIZE" "$FP_BW_SIZE" "$FP_BIG_SIZE" "$res/load.txt" "$nodes" | tee "$res/table.txt"
echo "raw outputs: $res/raw  table: $res/table.txt"
exit "$rc"
