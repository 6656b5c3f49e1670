#!/usr/bin/env bash
# Which path each row took, on the GPU machine (kind nvidia-h200), one call: the path taken and
# %peak per row for UCX direct, staged and the copy rows on the one H200,
# 2 ranks sharing it, without and with CUDA MPS; a `direct` device row forced
# through host bounce buffers (UCX_TLS=cuda_copy,sm,self) must be flagged;
# the shared-GPU-without-MPS line must be in the verdict and in the file;
# `gdrbench doctor` shows the ceilings. Results (HDF5 + JSON Lines, named for
# results/archive/) and a summary under $OUT; about 3-4 minutes warm.
#
# usage: jobs/gpu/path_and_peak.sh        (run(command="bash jobs/gpu/path_and_peak.sh", carry=[".device/gpu"]))
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
mkdir -p "$out/archive"
work=$(mktemp -d /tmp/path-and-peak.XXXXXX)
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*" | tee -a "$out/summary.txt"; }

GDR_DEVICE_TARGETS="gdrbench gdr_unit_tests" "$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
stamp built
bin=$root/build-device/gdrbench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
mpi=(timeout 150 mpirun -q --oversubscribe --bind-to none -np 2)
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT
day=$(date -u +%Y%m%dT%H%M%S)

"$root/build-device/tests/unit/gdr_unit_tests" --gtest_filter='Ceiling.*:UcxPath.*:Mps.*:Verdict.*' \
  >"$work/unit.txt" 2>&1
stamp "unit tests (ceiling, UCX path, MPS, verdict) on the GPU machine's UCX: rc $?"
"$bin" doctor >"$work/doctor.txt" 2>&1
stamp "doctor rc $? (4 expected: no RDMA device); its ceilings:"
grep -E "^\s+ceiling" "$work/doctor.txt" | tee -a "$out/summary.txt"

# run LABEL [VAR=value ...] -- gdrbench run arguments
run() {
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local name=${day}_$(hostname -s)_2r_h200-path-$label   # results/archive naming (rename to the start_utc when archiving)
  env "${envs[@]}" "${mpi[@]}" "$bin" run -T ucx -m cuda --case-time 0.3 "$@" \
    --output "$out/archive/$name.h5" --json "$out/archive/$name.jsonl" >"$work/$label.txt" 2>&1
  stamp "$label: rc $?"
  grep -E "^# (verdict|note: '!'|note: %peak)" "$work/$label.txt" | tee -a "$out/summary.txt"
}

sweep=(-t latency,bw -b 16 -e 64M -f 4 --path direct,staged --reference copy)
run nomps -- "${sweep[@]}"
run forced-bounce UCX_TLS=cuda_copy,sm,self -- -t bw -b 16 -e 64M -f 4 --path direct --reference copy
nvidia-cuda-mps-control -d && sleep 1
run mps -- "${sweep[@]}"
echo quit | nvidia-cuda-mps-control; sleep 1

tar -C "$work" -czf "$out/path_and_peak_raw.tgz" .
python3 - "$out/archive" <<'EOF' | tee -a "$out/summary.txt"
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    print(f"\n## {os.path.basename(f)}")
    print(f"{'test':8} {'transport':9} {'path':7} {'bytes':>10} {'busbw':>8} {'peak':>7} {'%peak':>6} host  path_taken")
    for line in open(f):
        r = json.loads(line)
        if r["bytes"] not in (16, 1048576, 67108864):
            continue
        peak = "-" if r["peak_gbps"] is None else f"{r['peak_gbps']:.1f}"
        pct = "-" if r["pct_peak"] is None else f"{r['pct_peak']:.1f}"
        print(f"{r['test']:8} {r['transport']:9} {r['path']:7} {r['bytes']:>10} {r['busbw_gbps']:>8.2f} {peak:>7} "
              f"{pct:>6} {'yes ' if r['via_host'] else 'no  '}  {r['path_taken'][:90]}")
EOF
python3 - "$out/archive" <<'EOF' | tee -a "$out/summary.txt"
# The claims to check, PASS/FAIL each (they never fail the script).
import glob, json, os, sys
def rows(label):
    f = glob.glob(os.path.join(sys.argv[1], f"*h200-path-{label}.jsonl"))
    return [json.loads(l) for l in open(f[0])] if f else []
forced = [r for r in rows("forced-bounce") if not r["reference"] and r["path"] == "direct" and r["bytes"] >= 1 << 20]
print("PASS" if forced and all(r["via_host"] for r in forced) else "FAIL",
      "forced UCX_TLS=cuda_copy,sm,self: every direct bw row >= 1 MiB flagged via_host")
nomps = [r for r in rows("nomps") if not r["reference"] and r["path"] == "direct" and r["bytes"] >= 1 << 20]
print("PASS" if nomps and not any(r["via_host"] for r in nomps) else "FAIL",
      "default UCX (cuda_ipc): direct rows >= 1 MiB not flagged")
peaked = [r for r in rows("nomps") + rows("mps") if r["pct_peak"] is not None]
print("PASS" if peaked else "FAIL", f"{len(peaked)} rows carry %peak")
over = [r for r in peaked if r["pct_peak"] > 105]
print("PASS" if not over else "FAIL", f"no row above 105 % of its peak ({len(over)} are)")
EOF
for f in "$out"/archive/*.h5; do
  python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]); print(sys.argv[1].split('/')[-1], '| gpu.shared:', f['facts'].attrs.get('gpu.shared'), '| verdict:', f.attrs.get('verdict'))" "$f" \
    2>&1 | tee -a "$out/summary.txt"
done
stamp done
