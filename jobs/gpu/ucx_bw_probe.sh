#!/usr/bin/env bash
# UCX direct bw on device memory against ucx_perftest, one call on the GPU machine: build; check that every p2p byte is
# verified on device memory (a corrupted message must be counted); then UCX
# direct bw/bibw (with the copy-d2d ceiling) under several settings, beside
# ucx_perftest tag_bw at the same sizes, without and with CUDA MPS.
# Details under $OUT (a tarball); a short table last.
#
# usage: jobs/gpu/ucx_bw_probe.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
work=$(mktemp -d /tmp/ucx-bw-probe.XXXXXX); mkdir -p "$out"
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*"; }

GDR_DEVICE_TARGETS="gdrbench gdr_dmabuf_probe" "$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
stamp built
bin=$root/build-device/gdrbench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
mpi=(timeout 120 mpirun -q --oversubscribe --bind-to none -np 2)
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT
$ucx_bin/ucx_info -c 2>/dev/null | grep -E "CUDA|RNDV" >"$work/ucx_info.txt"

# 1. Checks on the device: a clean run, then one corrupted message per case.
"${mpi[@]}" "$bin" run -T ucx -m cuda --path direct,staged -t latency,bw,bibw -b 8 -e 4M -f 64 \
  -n 6 -w 2 --reference none --output "$work/check.h5" --json "$work/check.jsonl" >"$work/check.txt" 2>&1
stamp "check run: rc $? (0 expected), wrong: $(grep -o '"wrong":[0-9]*' "$work/check.jsonl" | sort | uniq -c | tr '\n' ' ')"
GDR_SELFTEST_CORRUPT=1 "${mpi[@]}" "$bin" run -T ucx -m cuda --path direct,staged -t latency,bw,bibw -b 8 -e 4M \
  -f 64 -n 6 -w 2 --reference none --output "$work/corrupt.h5" --json "$work/corrupt.jsonl" >"$work/corrupt.txt" 2>&1
stamp "corrupt run: rc $? (4 expected), wrong: $(grep -o '"wrong":[0-9]*' "$work/corrupt.jsonl" | sort | uniq -c | tr '\n' ' ')"

# g LABEL [VAR=value ...] -- gdrbench run arguments
g() {
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "${mpi[@]}" "$bin" run -T ucx -m cuda --path direct --case-time 0.5 "$@" \
    --output "$work/$label.h5" --json "$work/$label.jsonl" >"$work/$label.txt" 2>&1
  stamp "$label: rc $?"
}

perftest() {  # label: ucx_perftest tag_bw on cuda memory, 1 MiB .. 256 MiB
  for ((s = 1048576; s <= ${PERF_MAX:-268435456}; s *= ${PERF_STEP:-4})); do
    $ucx_bin/ucx_perftest -p 13377 >/dev/null 2>&1 &
    sleep 0.5
    n=$(( 68719476736 / s ))  # 64 GiB per size (its default 1e6 iterations would take minutes)
    timeout 30 $ucx_bin/ucx_perftest 127.0.0.1 -p 13377 -t tag_bw -m cuda -s $s -n $n -w $(( n / 10 )) \
      >"$work/perftest_$1_$s.txt" 2>&1
    wait
  done
  stamp "$1 ucx_perftest done"
}

# The gpu ctest label (the GPU-only tests CI skips), then the buffer shape:
# the default slots against OSU's single buffer (--slots 1), twice each, under MPS.
ctest --test-dir "$root/build-device" -L gpu --output-on-failure --timeout 240 >"$work/ctest_gpu.txt" 2>&1
stamp "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$work/ctest_gpu.txt")"
grep -E "^ *[0-9]+/[0-9]+ Test" "$work/ctest_gpu.txt"
d=(-t bw -b 1M -e 256M -f 2 --reference none --timeout 15)
nvidia-cuda-mps-control -d && sleep 1
g mps_auto1 -- "${d[@]}"
g mps_slots1a -- "${d[@]}" --slots 1
g mps_auto2 -- "${d[@]}"
g mps_slots1b -- "${d[@]}" --slots 1
perftest mps
echo quit | nvidia-cuda-mps-control; sleep 1

tar -C "$work" -czf "$out/ucx_bw_probe.tgz" .
python3 - "$work" <<'EOF'
import glob, json, os, re, sys
w = sys.argv[1]
perf = {}
for f in glob.glob(os.path.join(w, "perftest_*.txt")):
    mode, size = re.match(r".*perftest_(\w+?)_(\d+)\.txt", f).groups()
    fin = [l for l in open(f) if "Final" in l]
    if fin:  # MB/s there is MiB/s
        perf[(mode, int(size))] = float(fin[-1].split()[-4]) * 2**20 / 1e9
rows = {}
for f in sorted(glob.glob(os.path.join(w, "*.jsonl"))):
    run = os.path.basename(f)[:-6]
    if run in ("check", "corrupt"): continue
    for line in open(f):
        r = json.loads(line)
        t = r["test"] + ("/" + r["transport"] if r["reference"] else "")
        rows.setdefault((run, r["bytes"]), {})[t] = (r["algbw_gbps"], r["time_us_mean"], r["iters"], r["wrong"])
print(f"{'run':14s} {'bytes':>10s}  test: GB/s (iters, wrong); perftest GB/s")
for (run, b), tests in sorted(rows.items()):
    p = perf.get((run.split("_")[0], b))
    print(f"{run:14s} {b:>10d}  " + "  ".join(f"{t}: {v[0]:.1f} ({v[2]},{v[3]})" for t, v in sorted(tests.items()))
          + (f"  perftest {p:.1f}" if p else ""))
EOF
