#!/usr/bin/env bash
# The bw target against ucx_perftest with statistics (one device call): under CUDA MPS, 2 ranks on GPU 0,
# UCX direct bw (gdrbench defaults, 1-64 MiB) and ucx_perftest tag_bw of the same UCX at the
# same sizes, ROUNDS (6) rounds each, the order alternating (ABBA...), then per size the
# median of each tool, their ratio, and each tool's spread (max/min over its rounds).
# A single pair of runs says little at 1-8 MiB there: both tools swing by 15-30% run to run.
# usage: [ROUNDS=6] jobs/gpu/ucx_bw_rounds.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
# The whole script runs under CUDA MPS: jobs/with_mps.sh starts the daemon, runs this
# script again inside it, and stops the daemon however it ends.
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || exec "$root/jobs/with_mps.sh" bash "$0" "$@"
out=${OUT:-/tmp/gdr-out}; mkdir -p "$out"
w=$(mktemp -d /tmp/rounds.XXXXXX)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$root/jobs/gpu/device_build.sh" "$root/build-device" || exit 1
. "$root/jobs/gpu/ucx_env.sh" "$root/build-device"
sizes="1048576 2097152 4194304 8388608 16777216 33554432 67108864"
gdr() {
  timeout 120 mpirun -q --oversubscribe --bind-to none -x LD_LIBRARY_PATH -x CUDA_MPS_PIPE_DIRECTORY -np 2 \
    "$root/build-device/gdrbench" run -T ucx -m cuda --path direct -t bw -b 1M -e 64M -f 2 --reference none \
    --output "$w/gdr$1.h5" --json "$w/gdr$1.jsonl" >"$w/gdr$1.txt" 2>&1
}
perf() {
  local s n
  for s in $sizes; do
    n=1280   # = the messages of gdrbench's 20 iterations x window 64
    $ucx_bin/ucx_perftest -p 13399 >/dev/null 2>&1 & sleep 0.4
    timeout 30 $ucx_bin/ucx_perftest 127.0.0.1 -p 13399 -t tag_bw -m cuda -s "$s" -n $n -w 320 \
      >"$w/pt$1_$s.txt" 2>&1
    wait
  done
}
for ((k = 1; k <= ${ROUNDS:-6}; k++)); do
  if (( k % 2 )); then gdr $k; perf $k; else perf $k; gdr $k; fi
  echo "round $k done"
done
tar -C "$w" -czf "$out/ucx_bw_rounds.tgz" .
python3 - "$w" $sizes <<'EOF'
import glob, json, os, statistics as st, sys
w, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
g, p = {s: [] for s in sizes}, {s: [] for s in sizes}
for f in glob.glob(os.path.join(w, "gdr*.jsonl")):
    for line in open(f):
        r = json.loads(line)
        if r["test"] == "bw" and r["bytes"] in g:
            # the median time of the slowest rank, as bench_vs_peers reads it
            g[r["bytes"]].append(r["algbw_gbps"] * r["time_us_mean"] / r.get("time_us_median", r["time_us_mean"]))
for s in sizes:
    for f in glob.glob(os.path.join(w, f"pt*_{s}.txt")):
        fin = [l for l in open(f) if l.startswith("Final:")]
        if fin: p[s].append(float(fin[-1].split()[6].replace(",", "")) * 2**20 / 1e9)
print("bw under MPS, GB/s: median of each tool's rounds (n), ratio of medians, spread = max/min")
print(f"{'bytes':>10} | {'gdrbench':>9} {'n':>2} {'spread':>6} | {'tag_bw':>9} {'n':>2} {'spread':>6} | {'ratio':>6}")
for s in sizes:
    a, b = g[s], p[s]
    ma = st.median(a) if a else float('nan'); mb = st.median(b) if b else float('nan')
    sa = max(a) / min(a) if a else float('nan'); sb = max(b) / min(b) if b else float('nan')
    print(f"{s:>10} | {ma:9.1f} {len(a):>2} {sa:6.2f} | {mb:9.1f} {len(b):>2} {sb:6.2f} | {ma / mb:6.3f}")
EOF
