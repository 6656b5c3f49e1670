#!/usr/bin/env bash
# Benchmark (not a test), issue 4 "Benchmark inside the same VM": in ONE
# Soft-RoCE guest boot (tests/softroce/vm.sh), perftest's ib_write_bw and
# ib_write_lat and gdrbench's verbs bw and latency on the same rxe devices and
# sizes; then, on the host, our value over perftest's per size.
#
# Targets: bw from 1 MiB up >= 0.9 x ib_write_bw; 8-byte latency <= 1.2 x
# ib_write_lat. Ratios only: software RDMA (rxe) under qemu TCG emulation.
#
# Like with like:
#  - devices: perftest server on rxe0, client on rxe1 (GID index 0, link-local,
#    RoCE v2; out-of-band TCP over 127.0.0.1); gdrbench rank 0 on rxe1, rank 1
#    on rxe0 (GDR_VERBS_HCA), so data crosses the veth pair rxe1 -> rxe0 in both.
#  - window: perftest --tx-depth = gdrbench --window = $WINDOW (default 16, not
#    perftest's 128 / gdrbench's 64: rxe under emulation moves ~10 MB/s, and
#    64 x 4 MiB per gdrbench iteration would not fit the time budget).
#  - messages: perftest -n = gdrbench bw iterations x window (same count timed).
#  - bw: perftest "BW average[MB/sec]" is MiB/s (2^20 B, per its --help) ->
#    x 2^20 / 1e9 = GB/s; gdrbench: bytes / mean time per message (slowest
#    rank), the same total-bytes-over-total-time average.
#  - latency: both are one-way (round trip / 2; perftest README says so).
#    Target on the median: perftest t_typical vs gdrbench's median iteration;
#    averages (t_avg vs mean) shown beside, emulation outliers dominate them.
#
# Usage: jobs/bench_verbs_vs_perftest.sh   (env: WINDOW BW_ITERS LAT_ITERS
#        BW_MIN BW_MAX BW_FACTOR LAT_MIN LAT_MAX LAT_FACTOR DIAG_SIZE GDRBENCH_BUILD)
# Order in the guest: ib_write_lat, gdrbench latency, ib_write_bw, gdrbench bw
# (each pair back to back, so a change of load on the host hits both alike),
# then a diagnostic at DIAG_SIZE (default 1 MiB; empty: skip): ib_write_bw
# with a busy loop on the other vCPU, and ib_send_bw (its receiver polls).
# Raw guest outputs: <build>/bench-verbs-vs-perftest/<UTC time>/raw/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${GDRBENCH_BUILD:-$top/build}
[[ -x $build/gdrbench ]] || { echo "no $build/gdrbench (set GDRBENCH_BUILD)" >&2; exit 2; }
WINDOW=${WINDOW:-16} BW_ITERS=${BW_ITERS:-3} LAT_ITERS=${LAT_ITERS:-300}
BW_MIN=${BW_MIN:-4096} BW_MAX=${BW_MAX:-4194304} BW_FACTOR=${BW_FACTOR:-4}
DIAG_SIZE=${DIAG_SIZE-1048576}
LAT_MIN=${LAT_MIN:-8} LAT_MAX=${LAT_MAX:-4096} LAT_FACTOR=${LAT_FACTOR:-8}
sweep() { local s=$1 out=; while ((s <= $2)); do out+="$s "; s=$((s * $3)); done; echo "${out% }"; }
bw_sizes=$(sweep "$BW_MIN" "$BW_MAX" "$BW_FACTOR")
lat_sizes=$(sweep "$LAT_MIN" "$LAT_MAX" "$LAT_FACTOR")

res=$build/bench-verbs-vs-perftest/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$res/raw"
# A private copy of the binary: a rebuild of $build during the run can't swap it.
cp "$build/gdrbench" "$res/gdrbench"
echo "results: $res"
start=$(date +%s)
set +e
"$top/tests/softroce/vm.sh" --share "$res" --timeout 420 \
  --env "BW_SIZES=$bw_sizes" --env "BW_FACTOR=$BW_FACTOR" \
  --env "LAT_SIZES=$lat_sizes" --env "LAT_FACTOR=$LAT_FACTOR" \
  --env "DIAG_SIZE=$DIAG_SIZE" --env "WINDOW=$WINDOW" --env "BW_ITERS=$BW_ITERS" --env "LAT_ITERS=$LAT_ITERS" \
  -- bash "$top/tests/softroce/bench_guest.sh" /results/raw /results/gdrbench \
  2>&1 | tee "$res/guest-output.txt"
rc=${PIPESTATUS[0]}
set -e
echo "guest run: exit $rc, $(( $(date +%s) - start )) s wall (boot included)"

py=
for p in /usr/bin/python3 python3; do "$p" -c 'import h5py' 2>/dev/null && { py=$p; break; }; done
[[ -n $py ]] || { echo "no python3 with h5py (apt-get install python3-h5py)" >&2; exit 2; }
"$py" - "$res/raw" "$bw_sizes" "$lat_sizes" "$WINDOW" "$DIAG_SIZE" <<'PY' | tee "$res/table.txt"
import os, re, sys
import h5py
import numpy as np
raw, bw_sizes, lat_sizes, window, diag = (sys.argv[1], sys.argv[2].split(), sys.argv[3].split(),
                                          sys.argv[4], sys.argv[5])

def perftest_row(path, size):
    """The client's result row: the numeric fields of the line starting with SIZE."""
    if not os.path.exists(path):
        return None
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) >= 4 and f[0] == str(size) and re.fullmatch(r"\d+", f[1]):
            return [float(x) for x in f[2:]]
    return None

def gdr_cases(path):
    """bytes -> per-iteration time (s) of the slowest rank (NaN ranks ignored)."""
    out = {}
    if not os.path.exists(path):
        return out
    with h5py.File(path, "r") as f:
        for g in f["cases"].values():
            t = np.nanmax(g["times"][()], axis=0)
            out[int(g.attrs["bytes"])] = t
    return out

MiB = 1 << 20
bad = False
print(f"\n== bandwidth: ib_write_bw -t {window} vs gdrbench bw --window {window} "
      f"(GB/s = 1e9 B/s; perftest MiB/s x 2^20/1e9) ==")
print(f"{'size(B)':>9} {'perftest':>9} {'gdrbench':>9} {'ratio':>6}  target(>=0.90 from 1 MiB)")
gbw = gdr_cases(f"{raw}/gdr_bw.h5")
for s in map(int, bw_sizes):
    r = perftest_row(f"{raw}/perftest_bw_{s}.client.txt", s)
    p = r[1] * MiB / 1e9 if r else float("nan")          # BW average[MB/sec]
    g = s / np.mean(gbw[s]) / 1e9 if s in gbw else float("nan")
    ratio = g / p
    tgt = ""
    if s >= MiB:
        ok = ratio >= 0.9
        bad |= not ok
        tgt = "ok" if ok else "MISSED"
    print(f"{s:>9} {p:>9.4f} {g:>9.4f} {ratio:>6.2f}  {tgt}")

print("\n== latency, one way (us): ib_write_lat vs gdrbench latency ==")
print(f"{'size(B)':>9} {'pt typ':>8} {'gdr med':>8} {'ratio':>6}  {'target(<=1.2 at 8 B)':<20}"
      f" {'pt avg':>8} {'gdr mean':>8} {'ratio':>6}")
glat = gdr_cases(f"{raw}/gdr_lat.h5")
for s in map(int, lat_sizes):
    r = perftest_row(f"{raw}/perftest_lat_{s}.client.txt", s)
    # t_min t_max t_typical t_avg t_stdev p99 p99.9
    ptyp, pavg = (r[2], r[3]) if r else (float("nan"),) * 2
    gmed, gmean = ((np.median(glat[s]) * 1e6, np.mean(glat[s]) * 1e6) if s in glat
                   else (float("nan"),) * 2)
    ratio = gmed / ptyp
    tgt = ""
    if s == 8:
        ok = ratio <= 1.2
        bad |= not ok
        tgt = "ok" if ok else "MISSED"
    print(f"{s:>9} {ptyp:>8.1f} {gmed:>8.1f} {ratio:>6.2f}  {tgt:<20} {pavg:>8.1f} {gmean:>8.1f} "
          f"{gmean / pavg:>6.2f}")
if diag:
    d = int(diag)
    print(f"\n== diagnostic at {d} B (GB/s): why a receiver that polls costs bandwidth here ==")
    base = perftest_row(f"{raw}/perftest_bw_{d}.client.txt", d)
    base = base[1] * MiB / 1e9 if base else float("nan")
    for name, stem in [("ib_write_bw, busy loop in the guest", "diag_write_bw_spin"),
                       ("ib_send_bw (receiver polls its CQ)", "diag_send_bw")]:
        r = perftest_row(f"{raw}/{stem}_{d}.client.txt", d)
        v = r[1] * MiB / 1e9 if r else float("nan")
        print(f"  {name:<38} {v:>8.4f}  ({v / base:.2f} x plain ib_write_bw {base:.4f})")
print("\ntargets:", "MISSED (see above)" if bad else "all met")
PY
echo "raw outputs: $res/raw  table: $res/table.txt"
exit "$rc"
