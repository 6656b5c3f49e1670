#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call: build; check that every p2p byte is
# verified on device memory (a corrupted message must be counted); then UCX
# direct bw/bibw with the copy-d2d ceiling under the UCX send caps named in
# CAPS, beside ucx_perftest tag_bw, without and with CUDA MPS.
# Details under $OUT (a tarball); a short table last.
#
# usage: jobs/gpu/issue13_probe.sh        CAPS="8 0" (GDR_UCX_CUDA_MAX_SENDS values)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
work=/tmp/issue13; mkdir -p "$work" "$out"
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*"; }

GDR_DEVICE_TARGETS=gdrbench "$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
stamp built
bin=$root/build-device/gdrbench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -d /tmp/ucx/lib ] && export LD_LIBRARY_PATH=/tmp/ucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mpi=(timeout 200 mpirun -q --oversubscribe --bind-to none -np 2)
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT

# 1. Checks on the device: a clean run, then one corrupted message per case.
"${mpi[@]}" "$bin" run -T ucx -m cuda --path direct,staged -t latency,bw,bibw -b 8 -e 4M -f 64 \
  -n 6 -w 2 --reference none --output "$work/check.h5" --json "$work/check.jsonl" >"$work/check.txt" 2>&1
stamp "check run: rc $? (0 expected), wrong: $(grep -o '"wrong":[0-9]*' "$work/check.jsonl" | sort | uniq -c | tr '\n' ' ')"
GDR_SELFTEST_CORRUPT=1 "${mpi[@]}" "$bin" run -T ucx -m cuda --path direct,staged -t latency,bw,bibw -b 8 -e 4M \
  -f 64 -n 6 -w 2 --reference none --output "$work/corrupt.h5" --json "$work/corrupt.jsonl" >"$work/corrupt.txt" 2>&1
stamp "corrupt run: rc $? (1 expected), wrong: $(grep -o '"wrong":[0-9]*' "$work/corrupt.jsonl" | sort | uniq -c | tr '\n' ' ')"

perftest() {  # label: ucx_perftest tag_bw on cuda memory at the sweep's sizes
  for s in 1048576 16777216 67108864 268435456; do
    /tmp/ucx/bin/ucx_perftest -p 13377 >/dev/null 2>&1 &
    sleep 1
    n=$(( 68719476736 / s ))  # 64 GiB per size (its default 1e6 iterations would take minutes)
    timeout 60 /tmp/ucx/bin/ucx_perftest 127.0.0.1 -p 13377 -t tag_bw -m cuda -s $s -n $n -w $(( n / 10 )) \
      >"$work/perftest_$1_$s.txt" 2>&1
    wait
    echo "$1 tag_bw $s: $(grep -E 'Final' "$work/perftest_$1_$s.txt" | tail -1)"
  done
}

sweep() {  # label
  for cap in ${CAPS:-8 0}; do
    GDR_UCX_CUDA_MAX_SENDS=$cap "${mpi[@]}" "$bin" run -T ucx -m cuda --path direct -t bw,bibw -b 1M -e 256M -f 4 \
      --reference copy-d2d --output "$work/$1_cap$cap.h5" --json "$work/$1_cap$cap.jsonl" >"$work/$1_cap$cap.txt" 2>&1
    stamp "$1 cap $cap: rc $?"
  done
  "${mpi[@]}" "$bin" run -T ucx -m cuda --path direct -t latency -b 8 -e 8 --reference none \
    --output "$work/$1_lat.h5" --json "$work/$1_lat.jsonl" >"$work/$1_lat.txt" 2>&1
  stamp "$1 latency: rc $?"
  perftest "$1"
}

sweep nomps
nvidia-cuda-mps-control -d && sleep 1
sweep mps
echo quit | nvidia-cuda-mps-control; sleep 1

tar -C "$work" -czf "$out/issue13_probe.tgz" .
python3 - "$work" <<'EOF'
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    run = os.path.basename(f)[:-6]
    if run in ("check", "corrupt"): continue
    for line in open(f):
        r = json.loads(line)
        key = (run, r["bytes"])
        rows.setdefault(key, {})[r["test"] + ("/" + r["transport"] if r["reference"] else "")] = (
            r["algbw_gbps"], r["time_us_mean"], r.get("time_us_median"), r["iters"], r["wrong"])
print(f"{'run':14s} {'bytes':>10s}  test: GB/s (iters, wrong)")
for (run, b), tests in sorted(rows.items()):
    print(f"{run:14s} {b:>10d}  " + "  ".join(f"{t}: {v[0]:.1f} ({v[3]}, {v[4]})" for t, v in sorted(tests.items())))
EOF
