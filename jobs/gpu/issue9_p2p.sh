#!/usr/bin/env bash
# One call on the 2-GPU machine (issue 9's p2p part): UCX direct p2p against
# NCCL's send/recv rows, and the bibw stall of UCX 1.13 over cuda_ipc with 64
# messages in flight each way, with and without UCX_RNDV_SCHEME=put_zcopy.
# Everything lands under $OUT; a summary is printed last.
#
# usage: jobs/gpu/issue9_p2p.sh      (on the device machine, one rank per GPU)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
stamp built
export LD_LIBRARY_PATH=/tmp/ucx/lib:$root/.device/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
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

run p2p 120 -- -t latency,bw "${sweep[@]}" --reference nccl -b 8 -e 1G -f 4 --timeout 30
# bibw with the default window (64 up to 4 MiB): the stall seen at 16 KiB.
run bibw_default 45 NCCL_NVLS_ENABLE=0 -- -t bibw "${sweep[@]}" --reference none -b 4K -e 64K -f 2 --timeout 10
run bibw_put 90 UCX_RNDV_SCHEME=put_zcopy -- -t bibw "${sweep[@]}" --reference nccl -b 8 -e 1G -f 4 --timeout 15
run bibw_w8 90 NCCL_NVLS_ENABLE=0 -- -t bibw "${sweep[@]}" --reference nccl -b 8 -e 1G -f 4 --window 8 --timeout 15

python3 - "$out" <<'PY'
import json, sys, os, collections
out = sys.argv[1]
for name in ("p2p", "bibw_default", "bibw_put", "bibw_w8"):
    p = os.path.join(out, name + ".jsonl")
    if not os.path.exists(p):
        continue
    rows = collections.defaultdict(dict)
    for line in open(p):
        r = json.loads(line)
        key = (r["test"], r["bytes"])
        rows[key]["nccl" if r["reference"] else "ucx"] = r
    print(f"== {name}: test bytes ucx(GB/s | us) nccl ratio wrong")
    for (test, b), d in sorted(rows.items()):
        f = "time_us_mean" if test == "latency" else "algbw_gbps"
        u, n = d.get("ucx", {}).get(f), d.get("nccl", {}).get(f)
        ratio = (n / u if test == "latency" else u / n) if u and n else None
        w = sum(x.get("wrong", 0) for x in d.values())
        print(f"{test:8s} {b:>11d} {u!s:>10.10s} {n!s:>10.10s} {ratio if ratio is None else round(ratio, 3)!s:>6s} {w}")
PY
grep -h "error\|timed out\|note" "$out"/*.txt | sort | uniq -c | head -20
