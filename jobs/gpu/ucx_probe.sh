#!/usr/bin/env bash
# Two UCX versions on the GPU machine, one call: UCX direct bw on device
# memory beside ucx_perftest tag_bw of the same UCX, same job, under several
# settings, for UCX 1.13.1-cuda (the carried tarball) and UCX 1.22 (PyPI's
# libucx-cu13 wheel, carried as .device/gpu/libucx_cu13-*.whl), with and
# without CUDA MPS. Settings: default; -c 0 (no data check); --slots 1;
# GDR_UCX_CUDA_MAX_SENDS=0 (no send cap); GDR_UCX_PASS_MEMH=0 (1.22: no
# registration handle on operations). Details under $OUT (a tarball); a
# table of GB/s per run and size last, perftest's beside.
#
# usage: jobs/gpu/ucx_probe.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
work=$(mktemp -d /tmp/ucxprobe.XXXXXX); mkdir -p "$out"
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

GDR_UCX=tarball "$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
whl=$(ls "$root"/.device/gpu/libucx_cu13-*.whl 2>/dev/null | head -1)
have122=
if [ -n "$whl" ]; then
  rm -rf /tmp/ucx122; python3 -m zipfile -e "$whl" /tmp/ucx122
  chmod +x /tmp/ucx122/libucx/bin/* 2>/dev/null
  if GDR_UCX_ROOT=/tmp/ucx122/libucx OUT=$work "$root/jobs/gpu/device_build.sh" "$root/build-122"; then have122=1; fi
  LD_LIBRARY_PATH=/tmp/ucx122/libucx/lib:/usr/local/cuda/lib64 /tmp/ucx122/libucx/bin/ucx_info -v >"$work/ucx122_info_v.txt" 2>&1
  LD_LIBRARY_PATH=/tmp/ucx122/libucx/lib:/usr/local/cuda/lib64 /tmp/ucx122/libucx/bin/ucx_info -d 2>&1 |
    grep -E "Transport|Device" >"$work/ucx122_transports.txt"
  echo "UCX 1.22 wheel transports: $(grep -o 'Transport: .*' "$work/ucx122_transports.txt" | sort -u | cut -d' ' -f2 | tr '\n' ' ')"
fi
stamp built
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT

# g VER LABEL [VAR=value ...] -- gdrbench run arguments
g() {
  local ver=$1 label=$2; shift 2
  local envs=() bin lib
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  if [ "$ver" = 113 ]; then bin=$root/build-device/gdrbench lib=/tmp/ucx/lib
  else bin=$root/build-122/gdrbench lib=/tmp/ucx122/libucx/lib:/usr/local/cuda/lib64; [ -n "$have122" ] || return; fi
  env LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} "${envs[@]}" timeout 120 mpirun -q --oversubscribe --bind-to none \
    -x LD_LIBRARY_PATH -np 2 "$bin" run -T ucx -m cuda --path direct --case-time 0.5 --reference none \
    --timeout 20 "$@" --output "$work/$label.h5" --json "$work/$label.jsonl" >"$work/$label.txt" 2>&1
  stamp "$label: rc $?"
}
perftest() {  # VER LABEL MIN MAX STEP: ucx_perftest tag_bw on cuda memory
  local ver=$1 label=$2 bin lib s n
  if [ "$ver" = 113 ]; then bin=/tmp/ucx/bin/ucx_perftest lib=/tmp/ucx/lib
  else bin=/tmp/ucx122/libucx/bin/ucx_perftest lib=/tmp/ucx122/libucx/lib:/usr/local/cuda/lib64; [ -n "$have122" ] || return; fi
  for ((s = $3; s <= $4; s *= $5)); do
    LD_LIBRARY_PATH=$lib "$bin" -p 13377 >/dev/null 2>&1 &
    sleep 0.5
    n=$(( 34359738368 / s ))  # 32 GiB per size
    LD_LIBRARY_PATH=$lib timeout 30 "$bin" 127.0.0.1 -p 13377 -t tag_bw -m cuda -s $s -n $n -w $(( n / 10 )) \
      >"$work/perftest_${label}_$s.txt" 2>&1
    wait
  done
  stamp "$label ucx_perftest done"
}

small=(-t bw -b 1M -e 16M -f 2)
large=(-t bw,bibw -b 1M -e 256M -f 4)
nvidia-cuda-mps-control -d && sleep 1
g 113 mps113_a -- "${small[@]}"
perftest 113 mps113_a 1048576 16777216 2
g 113 mps113_c0 -- "${small[@]}" -c 0
g 113 mps113_slots1 -- "${small[@]}" --slots 1
g 113 mps113_cap0 GDR_UCX_CUDA_MAX_SENDS=0 -- "${small[@]}"
g 113 mps113_b -- "${small[@]}"
perftest 113 mps113_b 1048576 16777216 2
g 122 mps122_a -- "${large[@]}"
g 122 mps122_memh0 GDR_UCX_PASS_MEMH=0 -- "${large[@]}"
g 122 mps122_cap0 GDR_UCX_CUDA_MAX_SENDS=0 -- "${large[@]}"
perftest 122 mps122_a 1048576 268435456 4
echo quit | nvidia-cuda-mps-control; sleep 1
g 113 nomps113_a -- "${large[@]}"
g 113 nomps113_c0 -- "${large[@]}" -c 0
perftest 113 nomps113_a 1048576 268435456 4
g 122 nomps122_a -- "${large[@]}"
g 122 nomps122_memh0 GDR_UCX_PASS_MEMH=0 -- "${large[@]}"
g 122 nomps122_cap0 GDR_UCX_CUDA_MAX_SENDS=0 -- "${large[@]}"
g 122 nomps122_both GDR_UCX_PASS_MEMH=0 GDR_UCX_CUDA_MAX_SENDS=0 -- "${large[@]}"
perftest 122 nomps122_a 1048576 268435456 4

tar -C "$work" -czf "$out/ucx_probe.tgz" .
python3 - "$work" <<'EOF'
import glob, json, os, re, sys
w = sys.argv[1]
perf = {}
for f in glob.glob(os.path.join(w, "perftest_*.txt")):
    label, size = re.match(r".*perftest_(\w+)_(\d+)\.txt", f).groups()
    fin = [l for l in open(f) if "Final" in l]
    if fin:  # MB/s there is MiB/s
        perf[(label, int(size))] = float(fin[-1].split()[-4]) * 2**20 / 1e9
rows = {}
for f in sorted(glob.glob(os.path.join(w, "*.jsonl"))):
    run = os.path.basename(f)[:-6]
    for line in open(f):
        r = json.loads(line)
        rows.setdefault((run, r["bytes"]), {})[r["test"]] = (r["algbw_gbps"], r["iters"], r["wrong"], r.get("slots"))
print(f"{'run':16s} {'bytes':>10s}  test: GB/s (iters, wrong); perftest tag_bw GB/s")
for (run, b), tests in sorted(rows.items()):
    p = perf.get((run, b))
    print(f"{run:16s} {b:>10d}  " + "  ".join(f"{t}: {v[0]:.1f} ({v[1]},{v[2]})" for t, v in sorted(tests.items()))
          + (f"  perftest {p:.1f}" if p else ""))
for (label, b), v in sorted(perf.items()):
    if (label, b) not in rows: print(f"perftest {label:16s} {b:>10d} {v:.1f}")
EOF
