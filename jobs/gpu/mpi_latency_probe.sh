#!/usr/bin/env bash
# One device call: where `gdrbench -T mpi -t latency` (8 B, device memory) loses
# time against the MPI's own ping-pong (jobs/gpu/mpi_pingpong.c): the ping-pong in
# its three loop shapes (block, poll, prepost: gdrbench's shape without gdrbench)
# beside gdrbench, ROUNDS (3) ABBA rounds, medians of one-way us. Run it under MPS
# with jobs/with_mps.sh when the ranks share one GPU.
#   usage: [GDR_UCX=wheel|tarball] [ROUNDS=3] [MEM=cuda|host] jobs/gpu/mpi_latency_probe.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gdr-out}/mpi-latency; rm -rf "$out"; mkdir -p "$out"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
build=$root/build-device-${GDR_UCX:-wheel}
timeout 300 "$root/jobs/gpu/device_build.sh" "$build" >"$out/build.txt" 2>&1 || { tail -3 "$out/build.txt"; exit 1; }
. "$root/jobs/gpu/ucx_env.sh" "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mem=${MEM:-cuda}; ppmem=$([ "$mem" = host ] && echo host || echo device)
mpicc -O2 -I/usr/local/cuda/include "$root/jobs/gpu/mpi_pingpong.c" -L/usr/local/cuda/lib64 -lcudart \
  -o "$out/mpi_pingpong" || exit 1
x=(); for v in LD_LIBRARY_PATH CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; do [ -n "${!v:-}" ] && x+=(-x "$v"); done
mpi=(timeout 60 mpirun -q --oversubscribe --bind-to none -np 2 "${x[@]}" --mca pml ucx)
pp() { "${mpi[@]}" "$out/mpi_pingpong" 8 10000 "$ppmem" "$2" >"$out/$1.txt" 2>&1; }
gdr() { "${mpi[@]}" "$root/build-device-${GDR_UCX:-wheel}/gdrbench" run -T mpi -m "$mem" --path direct -t latency \
  -b 8 -e 8 "${@:2}" --json "$out/$1.jsonl" --output "$out/$1.h5" --force >"$out/$1.txt" 2>&1; }
a() { pp "r$1_block" block; pp "r$1_poll" poll; pp "r$1_prepost" prepost; }
b() { gdr "r$1_gdr"; gdr "r$1_gdr_nocheck" --check none; }
for r in $(seq 1 "${ROUNDS:-3}"); do
  if (( r % 2 )); then a $r; b $r; else b $r; a $r; fi
  stamp "round $r"
done
/usr/bin/env python3 - "$out" "${ROUNDS:-3}" "$root/jobs/gpu" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from peers_table import pingpong_us as pp  # the gate's own reading of mpi_pingpong's line
def gdr(p):
    try:
        return [json.loads(l) for l in open(p) if l.strip()][0]["time_us_median"]
    except Exception:
        return None
rows = {v: [(pp if v in ("block", "poll", "prepost") else gdr)(f"{out}/r{r}_{v}.{'txt' if v in ('block', 'poll', 'prepost') else 'jsonl'}")
            for r in range(1, rounds + 1)] for v in ("block", "poll", "prepost", "gdr", "gdr_nocheck")}
base = statistics.median([x for x in rows["block"] if x] or [float("nan")])
print("8 B one-way us, median per round; ratio = median / block's median")
for v, xs in rows.items():
    m = statistics.median([x for x in xs if x] or [float("nan")])
    print(f"{v:12s} {[round(x, 2) if x else x for x in xs]}  median {m:.2f}  ratio {m / base:.3f}")
PY
stamp done
