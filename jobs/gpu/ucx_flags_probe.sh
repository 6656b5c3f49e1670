#!/usr/bin/env bash
# One device call: which of gdrbench's defaults cost `-T ucx` device bw
# against `ucx_perftest tag_bw` of the same UCX (2 ranks on one GPU, no MPS),
# in ABBA rounds, one variant of flags or UCX settings at a time (VARIANTS,
# from: default slots1 every none capN winN protov1), ucx_perftest
# with UCX's defaults and with protocols v1; then the path each row recorded
# and the verdict. TEST=latency compares one-way latency with tag_lat instead
# (medians; the ratio is then ours over theirs). Under MPS: run it inside
# jobs/with_mps.sh.
#   usage: GDR_UCX=wheel|tarball jobs/gpu/ucx_flags_probe.sh   (ROUNDS=2, SIZES="1M 4M 16M 64M", slotsN = --slots N,
#          TEST=bw, PTV1=0 leaves out ucx_perftest with protocols v1, VARIANTS also memh0|1 = GDR_UCX_PASS_MEMH, prepost0|1 = GDR_UCX_LATENCY_PREPOST,
#          capN = GDR_UCX_CUDA_MAX_SENDS=N, winN = --window N, warmN = -w N, PROTO_INFO=1 adds UCX's protocol choice of both tools)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
final=${OUT:-/tmp/gdr-out}; out=/tmp/probe-raw; rm -rf "$out"; mkdir -p "$out" "$final"
trap 'tar -C /tmp -czf "$final/probe-raw.tgz" probe-raw' EXIT
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
build=$root/build-device-${GDR_UCX:-wheel}
timeout 300 "$root/jobs/gpu/device_build.sh" "$build" || exit 1
. "$root/jobs/gpu/ucx_env.sh" "$build"
stamp "built against $(cat "$build/ucx-root.txt")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bin=$build/gdrbench pt=$ucx_bin/ucx_perftest
bytes() { numfmt --from=iec "$1"; }
gdr() {  # NAME ARGS...   (the variants' environment passes through when set)
  local name=$1 x=(); shift
  for v in GDR_UCX_CUDA_MAX_SENDS UCX_PROTO_ENABLE UCX_PROTO_INFO GDR_UCX_PASS_MEMH GDR_UCX_LATENCY_PREPOST; do [ -n "${!v:-}" ] && x+=(-x "$v"); done
  timeout 120 mpirun -q --oversubscribe --bind-to none -np 2 -x LD_LIBRARY_PATH "${x[@]}" "$bin" run -T ucx -m cuda \
    --path direct -t "${TEST:-bw}" "$@" --output "$out/$name.h5" --json "$out/$name.jsonl" >"$out/$name.txt" 2>&1
  echo "$name rc=$?"
}
ptest() {  # NAME SIZE
  local port=$((14000 + RANDOM % 1000))
  timeout 60 "$pt" -p $port >/dev/null 2>&1 & local s=$!; sleep 1
  timeout 60 "$pt" 127.0.0.1 -p $port -t "$pt_test" -s "$(bytes "$2")" -m cuda -n "$pt_n" -w 200 >"$out/$1.txt" 2>&1
  kill $s 2>/dev/null; wait $s 2>/dev/null
}
sizes=${SIZES:-"1M 4M 16M 64M"}
if [ "${TEST:-bw}" = latency ]; then pt_test=tag_lat pt_n=10000; else pt_test=tag_bw pt_n=2000; fi
read -ra variants <<<"${VARIANTS:-default slots1 every none}"
args_of() { case $1 in slots[0-9]*) echo --slots "${1#slots}" ;; every) echo --check every ;; none) echo --check none ;;
  win[0-9]*) echo --window "${1#win}" ;; warm[0-9]*) echo -w "${1#warm}" ;; esac; }
env_of() { case $1 in cap[0-9]*) echo GDR_UCX_CUDA_MAX_SENDS="${1#cap}" ;; memh[01]) echo GDR_UCX_PASS_MEMH="${1#memh}" ;;
  prepost[01]) echo GDR_UCX_LATENCY_PREPOST="${1#prepost}" ;; protov1) echo UCX_PROTO_ENABLE=n ;; *) echo GDR_PROBE=1 ;; esac; }
lo=$(echo "$sizes" | awk '{print $1}') hi=$(echo "$sizes" | awk '{print $NF}')
gdr_round() {  # latency: one run per size (the sizes need not be a geometric series), rows joined
  for v in "${variants[@]}"; do
    if [ "${TEST:-bw}" = latency ]; then
      for s in $sizes; do (export $(env_of $v); gdr "r$1_${v}_$s" -b "$s" -e "$s" $(args_of $v)); done
      cat "$out/r$1_${v}_"*.jsonl >"$out/r$1_$v.jsonl"
    else (export $(env_of $v); gdr "r$1_$v" -b "$lo" -e "$hi" -f 4 $(args_of $v)); fi
  done
}
pt_round() { for s in $sizes; do ptest "r$1_pt_$s" "$s"; [ "${PTV1:-1}" = 1 ] && UCX_PROTO_ENABLE=n ptest "r$1_ptv1_$s" "$s"; done; }
for r in $(seq 1 "${ROUNDS:-2}"); do
  if (( r % 2 )); then gdr_round $r; pt_round $r; else pt_round $r; gdr_round $r; fi
  stamp "round $r"
done
# The MPI transport over the same UCX, with the host copies that can rule staging out.
if [ "${MPI:-1}" = 1 ]; then
  timeout 120 mpirun -q --oversubscribe --bind-to none -np 2 -x LD_LIBRARY_PATH --mca pml ucx "$bin" run -T mpi \
    -m cuda --path direct -t bw -b "$lo" -e "$hi" -f 4 --reference copy-d2h,copy-h2d,copy-d2d \
    --output "$out/mpi.h5" --json "$out/mpi.jsonl" >"$out/mpi.txt" 2>&1
  echo "mpi rc=$?"
fi
/usr/bin/env python3 - "$out" "$sizes" "${ROUNDS:-2}" "${variants[*]}" "${TEST:-bw}" "$root/jobs/gpu" <<'PY'
import json, sys, os, statistics
out, sizes, rounds, variants, test = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
sys.path.insert(0, sys.argv[6])
import peers_table  # the gate's reading of ucx_perftest's line
mib = 1 << 20
lat = test == "latency"
def b(s): return int(s[:-1]) * {"K": 1 << 10, "M": mib, "G": 1 << 30}[s[-1]] if s[-1] in "KMG" else int(s)
def perftest(p):
    r = peers_table.perftest(p)
    return r and r["lat_us" if lat else "gbps"]
def gdr(p, size):
    for l in open(p):
        r = json.loads(l)
        if r["bytes"] == size and not r["reference"]:
            return r
key = "time_us_median" if lat else "algbw_gbps"
print("median one-way us per round; ratio = median / median tag_lat (lower is better)" if lat
      else "bw GB/s per round; ratio = median / median tag_bw", "[its 90 % interval, peers_table.ratio_interval]")
for s in sizes:
    pt = [perftest(f"{out}/r{r}_pt_{s}.txt") for r in range(1, rounds + 1)]
    row = f"{s:>4} {'tag_lat' if lat else 'tag_bw'} {pt}"
    ptm = statistics.median([x for x in pt if x]) if any(pt) else None
    for v in ["ptv1"] * (os.environ.get("PTV1", "1") == "1") + variants:
        xs = []
        for r in range(1, rounds + 1):
            try: xs.append(perftest(f"{out}/r{r}_pt_{s}.txt".replace("_pt_", "_ptv1_")) if v == "ptv1"
                           else gdr(f"{out}/r{r}_{v}.jsonl", b(s))[key])
            except Exception: xs.append(None)
        m = statistics.median([x for x in xs if x]) if any(xs) else None
        iv = peers_table.ratio_interval(xs, pt) if m and ptm else None  # 90 %, the gate's interval
        row += (f" | {v} {[round(x, 2) if x else x for x in xs]} {m / ptm:.3} [{iv[0]:.3f}, {iv[1]:.3f}]"
                if iv else f" | {v} {xs}")
    print(row)
for name in ("r1_default", "mpi"):
    try:
        for l in open(f"{out}/{name}.jsonl"):
            r = json.loads(l)
            print(name, r["transport"], r["bytes"], "path:", r.get("path_taken"), "| via_host", r.get("via_host"),
                  "| %peak", r.get("pct_peak"), "| unknown:", r.get("path_unknown"))
    except Exception as e: print(name, "no rows", e)
PY
grep -h "GPUDirect\|warning" "$out/r1_default.txt" "$out/mpi.txt"
# PROTO_INFO=1: which protocol UCX chose for each tool's tag sends at the first size
# (UCX_PROTO_INFO=y prints its selection table), so a per-message gap between the two
# tools on the same UCX can be traced to a different protocol or lane (the gap seen
# with UCX 1.22 under MPS at 1 MiB). UCX 1.13 prints no such table with protocols v1.
if [ "${PROTO_INFO:-0}" = 1 ]; then
  (export UCX_PROTO_INFO=y; gdr proto_gdr -b "$lo" -e "$lo" -n 20; ptest proto_pt "$lo")
  for f in proto_gdr proto_pt; do
    echo "== $f: UCX_PROTO_INFO lines naming tag sends or rendezvous"
    grep -iE "tag_send|rndv|eager|zcopy|bcopy|cuda_ipc|cuda_copy" "$out/$f.txt" | sort | uniq -c | sort -rn | head -25
  done
fi
stamp done
