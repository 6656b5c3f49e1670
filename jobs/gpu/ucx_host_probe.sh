#!/usr/bin/env bash
# One device call: host-memory bw at 64 MiB over one UCX build (GDR_UCX, default tarball = 1.13.1),
# without MPS, ROUNDS (3) ABBA rounds of: gdrbench -T ucx -m host -t bw as the gate runs it,
# the same with the GPU hidden (CUDA_VISIBLE_DEVICES= : no CUDA context at all), and
# ucx_perftest tag_bw -m host (320 messages, 80 warm-up, as the gate counts them).
# Why: UCX 1.13.1's host row read 0.91 of tag_bw without MPS and 0.98 under it (gate of
# 2026-12-04); host memory should not care about MPS, so: is CUDA in the way?
# PINS ("none 0,1 0,8"): CPU pairs both tools run on, each in turn (jobs/gpu/pin_ranks.sh; "none" =
# unbound, as the gate ran them); NOGPU=1 adds the GPU-hidden run.
# Every run's output lands in /tmp/ucx-host as it ends, tarred to $OUT/ucx-host.tgz at the end (the
# device returns a few files only); the table is printed last.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=/tmp/ucx-host; rm -rf "$out"; mkdir -p "$out" "${OUT:-/tmp/gdr-out}"
trap 'tar -C /tmp -czf "${OUT:-/tmp/gdr-out}/ucx-host.tgz" ucx-host' EXIT
ucx=${GDR_UCX:-tarball}; build=$root/build-device-$ucx
GDR_UCX=$ucx timeout 300 "$root/jobs/gpu/device_build.sh" "$build" >"$out/build.txt" 2>&1 || { tail -3 "$out/build.txt"; exit 1; }
. "$root/jobs/gpu/ucx_env.sh" "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ lscpu; lscpu -e=CPU,CORE,SOCKET,NODE,CACHE; } >"$out/lscpu.txt" 2>&1
grep -E "^(Thread|Core|Socket|NUMA node)" "$out/lscpu.txt"
pin=$root/jobs/gpu/pin_ranks.sh
gdr() { timeout 90 mpirun -q --oversubscribe --bind-to none -np 2 -x LD_LIBRARY_PATH -x PIN_CPUS "$pin" "$build/gdrbench" \
  run -T ucx -m host -t bw -b 64M -e 64M --json "$out/$1.jsonl" >"$out/$1.txt" 2>&1; echo "$1 rc=$?"; }
pt() {
  local port=$((15000 + RANDOM % 1000)) s
  PIN_RANK=0 timeout 60 "$pin" "$ucx_bin/ucx_perftest" -p $port >/dev/null 2>&1 & s=$!; sleep 1
  PIN_RANK=1 timeout 60 "$pin" "$ucx_bin/ucx_perftest" 127.0.0.1 -p $port -t tag_bw -s 67108864 -m host -n 320 -w 80 \
    >"$out/$1.txt" 2>&1
  echo "$1 rc=$?"; kill $s 2>/dev/null; wait $s 2>/dev/null
}
a() { gdr "$1_gdr"; [ "${NOGPU:-0}" = 1 ] && CUDA_VISIBLE_DEVICES= gdr "$1_nogpu"; }
read -ra pins <<<"${PINS:-none}"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for p in "${pins[@]}"; do
    export PIN_CPUS=$p; k="r${r}-${p//,/+}"
    if (( r % 2 )); then a "$k"; pt "${k}_pt"; else pt "${k}_pt"; a "$k"; fi
  done
done
/usr/bin/env python3 - "$out" "$root/jobs/gpu" "${PINS:-none}" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from peers_table import perftest  # the gate's own reading of ucx_perftest's line
def gdr(p):
    try: return [json.loads(l) for l in open(p) if l.strip()][0]["algbw_gbps"]
    except Exception: return None
def pt(p):
    return (perftest(p) or {}).get("gbps")
rounds = sorted({os.path.basename(p).split("-")[0] for p in glob.glob(f"{out}/r*-*")})
for pin in sys.argv[3].split():
    for v in ("gdr", "nogpu", "pt"):
        xs = [(gdr if v != "pt" else pt)(f"{out}/{r}-{pin.replace(',', '+')}_{v}.{'jsonl' if v != 'pt' else 'txt'}")
              for r in rounds]
        good = [x for x in xs if x]
        if good:
            print(f"cpus {pin:6} {v:6} GB/s per round {[round(x, 3) if x else x for x in xs]} "
                  f"median {statistics.median(good):.3f}")
PY
