#!/usr/bin/env bash
# One device call: host-memory bw at 64 MiB over one UCX build (GDR_UCX, default tarball = 1.13.1),
# without MPS, ROUNDS (3) ABBA rounds of: gdrbench -T ucx -m host -t bw as the gate runs it,
# the same with the GPU hidden (CUDA_VISIBLE_DEVICES= : no CUDA context at all), and
# ucx_perftest tag_bw -m host (320 messages, 80 warm-up, as the gate counts them).
# Why: UCX 1.13.1's host row read 0.91 of tag_bw without MPS and 0.98 under it (gate of
# 2026-12-04); host memory should not care about MPS, so: is CUDA in the way?
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
gdr() { timeout 90 mpirun -q --oversubscribe --bind-to none -np 2 -x LD_LIBRARY_PATH "$build/gdrbench" run -T ucx \
  -m host -t bw -b 64M -e 64M --json "$out/$1.jsonl" >"$out/$1.txt" 2>&1; echo "$1 rc=$?"; }
pt() {
  local port=$((15000 + RANDOM % 1000)) s
  timeout 60 "$ucx_bin/ucx_perftest" -p $port >/dev/null 2>&1 & s=$!; sleep 1
  timeout 60 "$ucx_bin/ucx_perftest" 127.0.0.1 -p $port -t tag_bw -s 67108864 -m host -n 320 -w 80 >"$out/$1.txt" 2>&1
  echo "$1 rc=$?"; kill $s 2>/dev/null; wait $s 2>/dev/null
}
a() { gdr "r$1_gdr"; CUDA_VISIBLE_DEVICES= gdr "r$1_nogpu"; }
for r in $(seq 1 "${ROUNDS:-3}"); do if (( r % 2 )); then a $r; pt "r${r}_pt"; else pt "r${r}_pt"; a $r; fi; done
/usr/bin/env python3 - "$out" "$root/jobs/gpu" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from peers_table import perftest  # the gate's own reading of ucx_perftest's line
def gdr(p):
    try: return [json.loads(l) for l in open(p) if l.strip()][0]["algbw_gbps"]
    except Exception: return None
def pt(p):
    return (perftest(p) or {}).get("gbps")
rounds = sorted({os.path.basename(p).split("_")[0] for p in glob.glob(f"{out}/r*_*")})
for v in ("gdr", "nogpu", "pt"):
    xs = [(gdr if v != "pt" else pt)(f"{out}/{r}_{v}.{'jsonl' if v != 'pt' else 'txt'}") for r in rounds]
    good = [x for x in xs if x]
    print(f"{v:6} GB/s per round {[round(x, 3) if x else x for x in xs]} median {statistics.median(good) if good else '-'}")
PY
