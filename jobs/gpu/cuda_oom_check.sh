#!/usr/bin/env bash
# One call on the GPU machine: the out-of-memory check of -m cuda
# (cudaMemGetInfo per device), before any timing. Cases:
#   np1_200G      one rank, -e 200G on a ~140 GiB device       -> exit 2, one line
#   np2_100G_ucx  two ranks sharing the one device, -e 100G    -> exit 2, "shared by 2 ranks"
#   held_40G      a second process holds 110 GiB of the device, -e 40G
#                 (fits the empty device, not what is free)     -> exit 2, names the free memory
#   fits_8G       two ranks, ucx direct, allreduce at 8 GiB     -> exit 0, #wrong 0 (not refused)
#   fits_40G_np1  one rank, allreduce at 40 GiB over direct then staged
#                 (each lane frees its buffers after its last case) -> exit 0
#   reuse_24G     two ranks, latency, bw, bibw at 24 GiB (144 GiB in all, 96 per block) -> exit 0
#   late_oom      past the check, another process takes the device before the
#                 copy references allocate                       -> exit 2, earlier rows kept
# Each refused case must print one line naming the size and "cuda memory" and
# no table row (nothing timed). Details under $OUT, a table last.
#
# usage: jobs/gpu/cuda_oom_check.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
bin=$root/build-device/gdrbench
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader | tee "$out/gpu.txt"

results=()
case_run() {  # name, expected rc, np, gdrbench run args...
  local name=$1 want=$2 np=$3; shift 3
  local t0=$SECONDS
  timeout 300 mpirun -q --bind-to none -np "$np" "$bin" run "$@" --output "$out/$name.h5" \
    --json "$out/$name.jsonl" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$? secs=$((SECONDS - t0))
  local lines rows verdict=ok
  lines=$(grep -c . "$out/$name.err"); rows=$(grep -c . "$out/$name.jsonl" 2>/dev/null || echo 0)
  [ "$rc" = "$want" ] || verdict="FAIL (rc $rc, wanted $want)"
  if [ "$want" = 2 ]; then
    grep -q "cuda memory" "$out/$name.err" || verdict="FAIL (no 'cuda memory' in the message)"
    [ "$lines" = 1 ] || verdict="FAIL ($lines lines on stderr)"
    [ "$rows" = 0 ] || verdict="FAIL ($rows rows timed before the refusal)"
  fi
  results+=("$(printf '%-13s rc %-3s %3ss rows %-3s %s' "$name" "$rc" "$secs" "$rows" "$verdict")")
  echo "== $name: rc $rc in ${secs}s"; cat "$out/$name.err"
}

case_run np1_200G 2 1 -m cuda -T ucx -t allreduce -b 8 -e 200G --reference none
case_run np2_100G_ucx 2 2 -m cuda -T ucx --path direct -t allreduce,latency,bw -b 8 -e 100G --reference none

# A second process holds 110 GiB: 40G fits the empty device (about 3x40G for
# the allreduce's buffers and more) but not what is left.
/usr/bin/python3 - <<'EOF' &
import ctypes, glob, time
lib = ctypes.CDLL(sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"))[0])
p = ctypes.c_void_p()
rc = lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(110 << 30))
print(f"holder: cudaMalloc(110 GiB) -> {rc}", flush=True)
time.sleep(60)
EOF
holder=$!
sleep 8
nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/used while held: /'
case_run held_40G 2 1 -m cuda -T ucx -t allreduce -b 40G -e 40G --reference none
kill $holder 2>/dev/null; wait $holder 2>/dev/null

case_run fits_8G 0 2 -m cuda -T ucx --path direct -t allreduce -b 8G -e 8G -n 3 -w 1 --reference none
grep -q '"wrong":0' "$out/fits_8G.jsonl" 2>/dev/null || results+=("fits_8G: no row with wrong 0")
# Direct and staged lanes one after the other (3 x 40 GiB each, not 240 GiB at once).
case_run fits_40G_np1 0 1 -m cuda -T ucx -t allreduce -b 40G -e 40G -n 2 -w 0 --reference none
[ "$(grep -c '"wrong":0' "$out/fits_40G_np1.jsonl" 2>/dev/null)" = 2 ] || results+=("fits_40G_np1: not 2 rows with wrong 0")
cat "$out/fits_8G.out" | tail -5

# Two ranks, latency then bw then bibw at 24 GiB: 48 GiB per rank per block, 144
# GiB for the three together, more than the device. Runs only because the
# next lanes reuse the finished lanes' buffers (freed ones stay held while
# the peer's UCX keeps its cuda_ipc mapping of them).
case_run reuse_24G 0 2 -m cuda -T ucx --path direct -t latency,bw,bibw -b 24G -e 24G -n 3 -w 1 --reference none

# Past the check: latency (2 x 8 GiB per rank) runs first; once its first row
# is out, a second process takes all but 4 GiB of what is free. bw over ucx
# reuses latency's buffers, but its copy references need 3 x 16 GiB more per
# rank, so a cudaMalloc fails. Expected: exit 2, a line naming the size and
# "cuda memory", the rows before kept, status failed.
/usr/bin/python3 - "$out/late_oom.jsonl" <<'EOF2' &
import ctypes, glob, os, sys, time
lib = ctypes.CDLL(sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"))[0])
lib.cudaFree(None)  # the context first, so the grab follows the first row closely
t = time.time() + 60
while time.time() < t and not (os.path.exists(sys.argv[1]) and os.path.getsize(sys.argv[1]) > 0):
    time.sleep(0.005)
free, total = ctypes.c_size_t(), ctypes.c_size_t()
lib.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
take = free.value - (4 << 30)
p = ctypes.c_void_p()
rc = lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(take))
print(f"holder: cudaMalloc({take / 2**30:.1f} GiB of {free.value / 2**30:.1f} free) -> {rc}", flush=True)
time.sleep(30)
EOF2
holder=$!
t0=$SECONDS
timeout 300 mpirun -q --bind-to none -np 2 "$bin" run -m cuda -T ucx --path direct -t latency,bw -b 8 -e 8G \
  -n 100 --reference copy --output "$out/late_oom.h5" --json "$out/late_oom.jsonl" >"$out/late_oom.out" 2>"$out/late_oom.err"
rc=$?
kill $holder 2>/dev/null; wait $holder 2>/dev/null
echo "== late_oom: rc $rc in $((SECONDS - t0))s"; cat "$out/late_oom.err"
rows=$(grep -c . "$out/late_oom.jsonl" 2>/dev/null || echo 0)
verdict=ok
[ "$rc" = 2 ] || verdict="FAIL (rc $rc, wanted 2)"
grep -q "cuda memory" "$out/late_oom.err" || verdict="FAIL (no 'cuda memory' in the message)"
[ "$rows" -gt 0 ] || verdict="FAIL (no latency rows kept)"
grep -q 'copy-d2d' "$out/late_oom.jsonl" && verdict="FAIL (copy rows: the holder came too late)"
results+=("$(printf '%-13s rc %-3s %3ss rows %-3s %s' late_oom "$rc" "$((SECONDS - t0))" "$rows" "$verdict")")

echo; echo "-m cuda out-of-memory check:"
printf '%s\n' "${results[@]}" | tee "$out/summary.txt"
# Few files come back from the device call: the logs go into one tarball.
(cd "$out" && tar czf logs.tgz --remove-files ./*.err ./*.out ./*.jsonl gpu.txt build.log fits_8G.h5)
