#!/usr/bin/env bash
# One call on the 2-GPU machine, GPU to GPU over NVLink against NCCL (one rank per GPU):
#   probe  UCX direct p2p against NCCL's send/recv rows, and the bibw stall of
#          UCX 1.13 over cuda_ipc with 64 sends in flight each way, with and
#          without UCX_RNDV_SCHEME=put_zcopy, uncapped (GDR_UCX_CUDA_MAX_SENDS=0)
#   final  the issue's command (every test, ucx and mpi, direct and staged,
#          NCCL and copy rows, 8 B .. 1 GiB, --pairs all) with the default cap,
#          after a bibw check at the sizes that stalled
# Everything lands under $OUT; a summary (ours vs NCCL, direct over staged)
# is printed last.
#
# usage: jobs/gpu/two_gpu_p2p.sh [probe|final]     (default final)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
stamp built
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
bin=$root/build-device/gdrbench
mpi=(mpirun -q --bind-to none -np 2)
sweep=(-T ucx -m cuda --path direct -n 10 -w 3)

run() {  # name, seconds, env..., -- gdrbench run args
  local name=$1 secs=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("-x" "$1"); shift; done; shift
  timeout "$secs" "${mpi[@]}" "${envs[@]}" "$bin" run "$@" --output "$out/$name.h5" \
    --json "$out/$name.jsonl" >"$out/$name.txt" 2>&1
  stamp "$name: rc $? ($(grep -c . "$out/$name.jsonl" 2>/dev/null) rows)"
}

mode=${1:-final}
if [ "$mode" = probe ]; then
  export GDR_UCX_CUDA_MAX_SENDS=0
  run p2p 120 -- -t latency,bw "${sweep[@]}" --reference nccl -b 8 -e 1G -f 4 --timeout 30
  # bibw with the default window (64 up to 4 MiB): the stall seen at 16 KiB.
  run bibw_default 45 NCCL_NVLS_ENABLE=0 -- -t bibw "${sweep[@]}" --reference none -b 4K -e 64K -f 2 --timeout 10
  run bibw_put 90 UCX_RNDV_SCHEME=put_zcopy -- -t bibw "${sweep[@]}" --reference nccl -b 8 -e 1G -f 4 --timeout 15
  run bibw_w8 90 NCCL_NVLS_ENABLE=0 -- -t bibw "${sweep[@]}" --reference nccl -b 8 -e 1G -f 4 --window 8 --timeout 15
else
  run bibw_capped 45 NCCL_NVLS_ENABLE=0 -- -t bibw "${sweep[@]}" --reference none -b 4K -e 64K -f 2 --timeout 10
  rm -f "$out"/bibw_capped.h5 "$out"/bibw_capped.jsonl
  run full 200 NCCL_NVLS_ENABLE=0 -- -t allreduce,latency,bw,bibw -T ucx,mpi -m cuda --path direct,staged -n 10 -w 2 \
    --reference nccl,copy -b 8 -e 1G --pairs all --timeout 20
fi

python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
for name in ("p2p", "bibw_default", "bibw_put", "bibw_w8", "full"):
    p = os.path.join(out, name + ".jsonl")
    if not os.path.exists(p):
        continue
    rows = {}
    for line in open(p):
        r = json.loads(line)
        rows.setdefault((r["test"], r["transport"], r["path"], r["bytes"]), r)  # first pair: 0>1
    print(f"== {name}: test bytes | ucx direct vs nccl (GB/s; latency us) ratio | direct/staged | wrong")
    for (test, tr, path, b), r in sorted(rows.items()):
        if tr != "ucx" or path != "direct":
            continue
        f = "time_us_mean" if test == "latency" else ("busbw_gbps" if test == "allreduce" else "algbw_gbps")
        u = r[f]
        n = rows.get((test, "nccl", "direct", b), {}).get(f)
        st = rows.get((test, "ucx", "staged", b), {}).get(f)
        ratio = (n / u if test == "latency" else u / n) if u and n else None
        speed = (st / u if test == "latency" else u / st) if u and st else None
        wrong = sum(x["wrong"] for k, x in rows.items() if k[0] == test and k[3] == b)
        fmtn = lambda x: "-" if x is None else f"{x:.4g}"
        print(f"{test:9s} {b:>11d} {fmtn(u):>9s} {fmtn(n):>9s} {fmtn(ratio):>6s} | {fmtn(speed):>6s} | {wrong}")
    print("rows:", sum(1 for _ in open(p)), "wrong total:", sum(json.loads(l)["wrong"] for l in open(p)))
PY
grep -h "error\|timed out\|note" "$out"/*.txt | sort | uniq -c | head -20
