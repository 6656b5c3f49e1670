"""The table of jobs/bench_verbs_vs_perftest.sh: each gdrbench verbs mode over
the perftest tool of the same shape, per size and repeat of one guest boot,
with the spread over repeats; then each fast path off over on.

    bench_verbs_table.py RAW "BW_SIZES" "LAT_SIZES" WINDOW REPEAT FP_LAT_SIZE FP_BW_SIZE [FP_BIG_SIZE [LOAD NODES]]

RAW holds rep1/, rep2/, ... as tests/softroce/bench_guest.sh leaves them.
LOAD: lines "EPOCH LOADAVG1" sampled on the host during the guest run.
Exit status 0 (the targets are reported, not enforced: emulation is noisy).
"""
import os
import re
import sys

import h5py
import numpy as np

MiB = 1 << 20
NAN = float("nan")


def perftest_row(path, size):
    """The client's result row: the numeric fields after #bytes and #iterations."""
    if not os.path.exists(path):
        return None
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) >= 4 and f[0] == str(size) and re.fullmatch(r"\d+", f[1]):
            try:
                return [float(x) for x in f[2:]]
            except ValueError:
                return None
    return None


def gdr_cases(path):
    """bytes -> (per-iteration times of the slowest rank in s, transport_mode, wrong)."""
    out = {}
    if not os.path.exists(path):
        return out
    with h5py.File(path, "r") as f:
        for g in f["cases"].values():
            t = np.nanmax(g["times"][()], axis=0)
            mode = g.attrs.get("transport_mode", "")
            mode = mode.decode() if isinstance(mode, bytes) else str(mode)
            out[int(g.attrs["bytes"])] = (t, mode, int(g.attrs["wrong"]))
    return out


def spread(xs):
    xs = [x for x in xs if np.isfinite(x)]
    if not xs:
        return "      -"
    return f"{np.median(xs):6.2f} [{min(xs):.2f}-{max(xs):.2f}]"


# (label, pair name, which size, median?): files fp_<name>_on / fp_<name>_off,
# run as a pair in ABBA order over the repeats (bench_guest.sh); the size is
# FP_LAT_SIZE, FP_BW_SIZE or FP_BIG_SIZE.
FAST_PATHS = [("inline off (latency imm)", "lat_noinline", "lat", True),
              ("eager inline off (latency imm)", "lat_noeager", "lat", True),
              ("eager inline off (latency poll)", "lat_poll_noeager", "lat", True),
              ("yield off (latency imm)", "lat_noyield", "lat", True),
              ("wait=event (latency imm)", "lat_event", "lat", True),
              ("bound to cores (latency imm)", "lat_imm_bound", "lat", True),
              ("bound to cores (latency poll)", "lat_poll_bound", "lat", True),
              ("signal every WR (bw write)", "bw_write_signal_all", "bw", False),
              ("postlist off (bw write)", "bw_write_nopostlist", "bw", False),
              ("receive batches off (bw imm)", "bw_imm_norecvbatch", "bw", False),
              ("yield off (bw imm)", "bw_imm_noyield", "bw", False),
              ("wait=poll (bw write)", "bw_write_poll", "bw", False),
              ("wait=poll (bw write, big)", "bw_write_big_poll", "big", False),
              ("--slots 1 (bw write, big)", "bw_write_big_slots1", "big", False)]


def print_load(load):
    """The host's load average during the run, from LOAD's samples."""
    if load and os.path.exists(load):
        xs = [float(l.split()[1]) for l in open(load) if len(l.split()) == 2]
        if xs:
            print(f"== host load average (1 min) during the run: median {np.median(xs):.1f} "
                  f"[{min(xs):.1f}-{max(xs):.1f}] over {len(xs)} samples (2 cores, shared)")


def versus(reps, cases, tool, s, perftest_value, gdr_value):
    """One size over the repeats: perftest's values, gdrbench's, their ratios,
    the transport modes seen and the wrong elements counted."""
    ratios, pts, gs, modes, wrong = [], [], [], set(), 0
    for d, c in zip(reps, cases):
        r = perftest_row(f"{d}/perftest_{tool}_{s}.client.txt", s)
        p = perftest_value(r) if r else NAN
        g = gdr_value(c[s][0]) if s in c else NAN
        if s in c:
            modes.add(c[s][1])
            wrong += c[s][2]
        pts.append(p)
        gs.append(g)
        ratios.append(g / p if p else NAN)
    med = np.nanmedian(ratios) if any(np.isfinite(ratios)) else NAN
    return pts, gs, ratios, med, modes, wrong


def bandwidth_table(reps, bw_sizes, window, misses):
    """gdrbench bw against ib_write_bw and ib_send_bw; the wrong elements seen."""
    wrong = 0
    print(f"\n== bandwidth (GB/s = 1e9 B/s; perftest MiB/s x 2^20/1e9), window {window}; "
          f"ratio = gdrbench / perftest, median [min-max] over {len(reps)} repeats ==")
    for tool, mode in (("ib_write_bw", "write"), ("ib_send_bw", "imm")):
        print(f"-- {tool} vs bw --verbs-mode {mode} (target >= 0.90 from 1 MiB)")
        print(f"{'size(B)':>9} {'perftest':>9} {'gdrbench':>9}  {'ratio':<22} mode")
        cases = [gdr_cases(f"{d}/gdr_bw_{mode}.h5") for d in reps]
        if not any(cases):
            print("  (not run: PARTS)")
            continue
        for s in bw_sizes:
            pts, gs, ratios, med, modes, w = versus(reps, cases, tool, s, lambda r: r[1] * MiB / 1e9,
                                                    lambda t, s=s: s / np.mean(t) / 1e9)
            wrong += w
            tgt = ""
            if s >= MiB:
                tgt = "ok" if med >= 0.9 else "MISSED"
                if tgt != "ok":
                    misses.append(f"bw {mode} {s} B: {med:.2f} of {tool}")
            print(f"{s:>9} {np.nanmedian(pts):>9.4f} {np.nanmedian(gs):>9.4f}  {spread(ratios):<22} "
                  f"{','.join(sorted(modes))} {tgt}")
    return wrong


def latency_table(reps, lat_sizes, misses):
    """gdrbench latency against ib_write_lat and ib_send_lat; the wrong elements seen."""
    wrong = 0
    print("\n== latency, one way (us): perftest t_typical vs gdrbench median; "
          "ratio median [min-max] over repeats ==")
    for tool, mode in (("ib_write_lat", "poll"), ("ib_send_lat", "imm")):
        print(f"-- {tool} vs latency --verbs-mode {mode} (target <= 1.20 at 8 B)")
        print(f"{'size(B)':>9} {'pt typ':>8} {'gdr med':>8}  {'ratio':<22} mode")
        cases = [gdr_cases(f"{d}/gdr_lat_{mode}.h5") for d in reps]
        if not any(cases):
            print("  (not run: PARTS)")
            continue
        for s in lat_sizes:
            # perftest: t_min t_max t_typical ...
            pts, gs, ratios, med, modes, w = versus(reps, cases, tool, s, lambda r: r[2],
                                                    lambda t: np.median(t) * 1e6)
            wrong += w
            tgt = ""
            if s == 8:
                tgt = "ok" if med <= 1.2 else "MISSED"
                if tgt != "ok":
                    misses.append(f"latency {mode} 8 B: {med:.2f} x {tool}")
            print(f"{s:>9} {np.nanmedian(pts):>8.1f} {np.nanmedian(gs):>8.1f}  {spread(ratios):<22} "
                  f"{','.join(sorted(modes))} {tgt}")
    return wrong


def fast_path_table(reps, sizes):
    """Each fast path's time off over on, where the repeats ran them; the wrong elements seen."""
    wrong = 0
    if not any(os.path.exists(f"{d}/fp_{FAST_PATHS[0][1]}_on.h5") or
               os.path.exists(f"{d}/fp_{FAST_PATHS[7][1]}_on.h5") for d in reps):
        return wrong
    print("\n== fast paths: time with it off / time with it on (> 1: it helps; "
          "wait: the other wait over the default: imm spins, write on rxe sleeps; "
          "--slots 1: one buffer over the default's distinct slots; bound: mpirun --bind-to core over "
          "unbound, as perftest runs), each a pair in ABBA order, "
          "median [min-max] over repeats ==")
    for label, name, which, median in FAST_PATHS:
        size = sizes[which]
        ratios = []
        for d in reps:
            a, b = gdr_cases(f"{d}/fp_{name}_on.h5"), gdr_cases(f"{d}/fp_{name}_off.h5")
            if size in a and size in b:
                f = np.median if median else np.mean
                ratios.append(f(b[size][0]) / f(a[size][0]))
                wrong += a[size][2] + b[size][2]
        print(f"  {label:<32} {size:>8} B  {spread(ratios)}")
    return wrong


def main():
    raw, bw_sizes, lat_sizes, window, repeat, fp_lat, fp_bw = sys.argv[1:8]
    fp_big = sys.argv[8] if len(sys.argv) > 8 else "1048576"
    load = sys.argv[9] if len(sys.argv) > 9 else ""
    nodes = sys.argv[10] if len(sys.argv) > 10 else "1"
    bw_sizes, lat_sizes = list(map(int, bw_sizes.split())), list(map(int, lat_sizes.split()))
    reps = [f"{raw}/rep{r}" for r in range(1, int(repeat) + 1)]
    misses = []

    where = ("two guests (node1 -> node2, rxe0 on eth0 each)" if nodes == "2"
             else "one guest (rxe1 -> rxe0 over a veth pair)")
    print(f"\n== {where}; repeats in ABBA order")
    print_load(load)
    wrong = bandwidth_table(reps, bw_sizes, window, misses)
    wrong += latency_table(reps, lat_sizes, misses)
    wrong += fast_path_table(reps, {"lat": int(fp_lat), "bw": int(fp_bw), "big": int(fp_big)})

    print(f"\n#wrong over every gdrbench row: {wrong}")
    print("targets:", "all met" if not misses and wrong == 0 else "MISSED: " + "; ".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
