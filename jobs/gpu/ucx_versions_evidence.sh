#!/usr/bin/env bash
# CUDA-aware MPI over UCX 1.13.1 and 1.22, without and with MPS, on the GPU machine, one device call (kind nvidia-h200, ~4-5 min):
#   run(command="bash jobs/gpu/ucx_versions_evidence.sh", carry=[".device/gpu"])
# (.device/gpu from jobs/gpu/make_bundle.sh: the UCX 1.13.1-cuda tarball and the
# libucx-cu13 1.22 wheel must both be in it.)
#
# 1. builds gdrbench against UCX 1.13.1 (tarball) and UCX 1.22.0 (wheel), side by side;
# 2. the ob1 case: `-T mpi -m cuda --path direct` under Open MPI's default PML must be
#    refused with exit 2 and the reason, not crash;
# 3. for each UCX, without and with CUDA MPS (jobs/with_mps.sh): 2 ranks on GPU 0,
#    `-T mpi,ucx -m cuda --path direct,staged -t latency,bw,bibw,allreduce`, 8 B-8 MiB
#    (x16), --case-time 0.3, Open MPI over `--mca pml ucx` with that UCX first on
#    LD_LIBRARY_PATH (so the mpi rows move device pointers through the same UCX);
# 4. $OUT/summary.txt: mpi vs ucx, direct vs staged, per size, each run's mpi.cuda_aware
#    and cuda.mps facts; $OUT/ucx_versions_evidence.tgz: every .h5, .jsonl and log.
# Each step is skipped, and said so, once BUDGET_S (290) seconds have passed (each run is
# capped at 100 s), so the call stays under 6 minutes.
# DRY_RUN=1 prints the commands instead (any machine). Without a GPU it stops at once.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
dry=${DRY_RUN:-}
budget=${BUDGET_S:-290}
mkdir -p "$out"
work=$(mktemp -d /tmp/ucx-versions-evidence.XXXXXX)
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$work/steps.txt"; }
over() { [ $(( $(date +%s) - t0 )) -ge "$budget" ]; }
x() { if [ -n "$dry" ]; then echo "+ $*"; else "$@"; fi; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

fail() { echo "ucx_versions_evidence: $*" >&2; exit 1; }
carried=$root/.device/gpu
ls "$carried"/ucx-*cuda*.tgz >/dev/null 2>&1 || fail "no UCX 1.13 tarball in $carried (jobs/gpu/make_bundle.sh makes the bundle)"
ls "$carried"/libucx_cu13-*.whl >/dev/null 2>&1 || fail "no libucx_cu13 wheel in $carried (jobs/gpu/make_bundle.sh --wheel FILE)"
if [ -z "$dry" ]; then
  timeout 20 nvidia-smi -L >"$work/gpus.txt" 2>&1 || fail "no GPU here (nvidia-smi -L: $(head -1 "$work/gpus.txt"))"
fi

# 1. Two builds at once, half the cores each.
half=$(( $(nproc) / 2 )); [ "$half" -ge 1 ] || half=1
build() {  # NAME GDR_UCX
  if [ -n "$dry" ]; then echo "+ GDR_UCX=$2 jobs/gpu/device_build.sh $root/build-$1"; return 0; fi
  MAKEFLAGS=-j$half CMAKE_BUILD_PARALLEL_LEVEL=$half GDR_UCX=$2 OUT=$work/$1 \
    "$root/jobs/gpu/device_build.sh" "$root/build-$1" >"$work/build-$1.txt" 2>&1
}
mkdir -p "$work/u113" "$work/u122"
build u113 tarball & p1=$!
build u122 wheel & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
stamp "builds: UCX 1.13 rc $r1, UCX 1.22 rc $r2"
[ "$r1" = 0 ] || [ "$r2" = 0 ] || { tail -20 "$work"/build-*.txt; fail "neither build worked"; }

lib_of() { cat "$root/build-$1/ucx-lib-path.txt" 2>/dev/null; }
# gdr NAME UCX MPIRUN-ARGS... -- GDRBENCH-ARGS...: one mpirun of 2 ranks on GPU 0.
gdr() {
  local name=$1 u=$2 margs=() lib; shift 2
  while [ "$1" != -- ]; do margs+=("$1"); shift; done; shift
  lib=$(lib_of "$u")
  if [ -n "$dry" ]; then echo "+ LD_LIBRARY_PATH=<$u's UCX> mpirun -np 2 ${margs[*]} build-$u/gdrbench run $*"; return 0; fi
  env LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" timeout 100 mpirun -q --oversubscribe --bind-to none \
    -x LD_LIBRARY_PATH -np 2 "${margs[@]}" "$root/build-$u/gdrbench" run "$@" --timeout 30 \
    --output "$work/$name.h5" --json "$work/$name.jsonl" >"$work/$name.txt" 2>&1
  local rc=$?
  stamp "$name: rc $rc"
  return $rc
}
pml_ucx=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
sweep=(-T mpi,ucx -m cuda --path direct,staged -t latency,bw,bibw,allreduce -b 8 -e 8M -f 16 --case-time 0.3)

# 2. Default PML (ob1 here): refused, not a crash.
for u in u113; do
  [ "$r1" = 0 ] || continue
  gdr ob1_refusal_$u $u -- -T mpi -m cuda --path direct -t bw -b 1M -e 1M
  echo "rc $?" >>"$work/ob1_refusal_$u.txt"
done

# What `gdrbench list` says under each PML (the probe of this launch).
for pml in default ucx; do
  [ "$r1" = 0 ] && [ -z "$dry" ] || continue
  margs=(); [ $pml = ucx ] && margs=("${pml_ucx[@]}")
  LD_LIBRARY_PATH="$(lib_of u113):${LD_LIBRARY_PATH:-}" timeout 60 mpirun -q -x LD_LIBRARY_PATH -np 1 "${margs[@]}" \
    "$root/build-u113/gdrbench" list 2>&1 | grep -A2 "^  mpi " >"$work/list_pml_$pml.txt"
done

# 3. The sweep, each UCX, without and with MPS.
for u in u113 u122; do
  { [ "$u" = u113 ] && [ "$r1" = 0 ]; } || { [ "$u" = u122 ] && [ "$r2" = 0 ]; } || continue
  if over; then stamp "skipped $u no-mps (budget)"; else gdr ${u}_nomps $u "${pml_ucx[@]}" -- "${sweep[@]}"; fi
  if over; then stamp "skipped $u mps (budget)"; continue; fi
  if [ -n "$dry" ]; then echo "+ jobs/with_mps.sh (the same mpirun)"; continue; fi
  lib=$(lib_of $u)
  LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" "$root/jobs/with_mps.sh" timeout 100 mpirun -q --oversubscribe \
    --bind-to none -x LD_LIBRARY_PATH -x CUDA_MPS_PIPE_DIRECTORY -np 2 "${pml_ucx[@]}" \
    "$root/build-$u/gdrbench" run "${sweep[@]}" --timeout 30 \
    --output "$work/${u}_mps.h5" --json "$work/${u}_mps.jsonl" >"$work/${u}_mps.txt" 2>&1
  stamp "${u}_mps: rc $?"
done
[ -n "$dry" ] && exit 0

# 4. Summary and archive.
python3 - "$work" >"$out/summary.txt" 2>&1 <<'EOF'
import glob, json, os, re, sys
work = sys.argv[1]
def fact(h5, key):
    try:
        import h5py
        with h5py.File(h5, "r") as f:
            v = f["facts"].attrs[key]
            return v.decode() if isinstance(v, bytes) else str(v)
    except Exception as e:  # no h5py: the raw strings of the file
        try:
            data = open(h5, "rb").read()
            m = re.search(rb"((?:not )?CUDA-aware: [ -~]{10,300})" if key == "mpi.cuda_aware"
                          else rb"((?:on|off|unclear): [ -~]{10,200})", data)
            return m.group(1).decode() if m else f"? ({e})"
        except OSError:
            return "?"
for t in sorted(glob.glob(os.path.join(work, "ob1_refusal_*.txt")) + glob.glob(os.path.join(work, "list_pml_*.txt"))):
    print(f"== {os.path.basename(t)[:-4]}:", " | ".join(l.strip() for l in open(t) if l.strip())[-600:])
print()
for j in sorted(glob.glob(os.path.join(work, "*.jsonl"))):
    name = os.path.basename(j)[:-6]
    if name.startswith("ob1"):
        continue
    rows = [json.loads(l) for l in open(j) if l.strip()]
    h5 = j[:-6] + ".h5"
    print(f"== {name}: {len(rows)} rows, wrong {sum(r['wrong'] or 0 for r in rows)}")
    print(f"   mpi.cuda_aware: {fact(h5, 'mpi.cuda_aware')}")
    print(f"   cuda.mps: {fact(h5, 'cuda.mps')}")
    cols = [("mpi", "direct"), ("ucx", "direct"), ("mpi", "staged"), ("ucx", "staged")]
    table = {}
    for r in rows:
        if r["reference"]:
            continue
        test = r["test"]
        v = r["time_us_mean"] if test == "latency" else r["busbw_gbps"]
        table.setdefault((test, r["bytes"]), {})[(r["transport"], r["path"])] = v
    print(f"   {'test':<10}{'bytes':>10}  " + "  ".join(f"{t+' '+p:>12}" for t, p in cols) +
          "   (latency: us one way; others: busbw GB/s)")
    for (test, b) in sorted(table, key=lambda k: (k[0], k[1])):
        cells = table[(test, b)]
        print(f"   {test:<10}{b:>10}  " + "  ".join(
            f"{cells[c]:>12.4g}" if c in cells else f"{'-':>12}" for c in cols))
    notes = [l.strip() for l in open(j[:-6] + ".txt") if "skipped" in l or "refused" in l]
    for n in notes[:6]:
        print("   note:", n[:300])
    print()
EOF
cat "$work/steps.txt" >>"$out/summary.txt"
tar -C "$work" -czf "$out/ucx_versions_evidence.tgz" . 2>/dev/null
cat "$out/summary.txt"
