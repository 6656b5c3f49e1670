"""The table of jobs/gpu/two_levels_probe.sh (standard library only: it runs on the GPU machine).

  two_levels_table.py DIR

Per variant (no-mps, mps), shape (osu, long) and size: each launch's busbw (GB/s) in launch
order, the spread between launches (max / min of the launch medians) and inside them (the
row's p99 / median time), and the SM clock (MHz) sampled while each launch ran (median).
"""
import glob
import json
import os
import statistics
import sys


def clocks(d):
    """[(epoch s, sm MHz, mem MHz, pstate)] from nvidia-smi's csv (timestamp like 2026/12/05 17:01:02.123)."""
    import datetime
    out = []
    for line in open(os.path.join(d, "clocks.csv"), errors="replace"):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 4:
            continue
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(f[1].split()[0]), float(f[2].split()[0]), f[3]))
        except ValueError:
            continue
    return out


def windows(d):
    """{launch name: (start, end)} from launches.txt."""
    w = {}
    for line in open(os.path.join(d, "launches.txt")):
        f = line.split()
        if len(f) >= 3:
            w.setdefault(f[2], [0.0, 0.0])[0 if f[1] == "start" else 1] = float(f[0])
    return w


def main(d):
    clk, win = clocks(d), windows(d)
    rows = {}
    for path in sorted(glob.glob(os.path.join(d, "*-*-*.jsonl"))):
        name = os.path.basename(path)[:-6]
        variant, shape, launch = name.rsplit("-", 2)
        s, e = win.get(name, (0, 0))
        sm = [c[1] for c in clk if s <= c[0] <= e]
        for line in open(path):
            r = json.loads(line)
            if r["test"] != "bw" or r["reference"]:
                continue
            key = (variant, shape, r["bytes"])
            rows.setdefault(key, []).append((int(launch), r["busbw_gbps"], r["iters"],
                                             r["time_us_p99"] / r["time_us_median"],
                                             statistics.median(sm) if sm else float("nan")))
    print(f"{'variant':7s} {'shape':5s} {'size':>9s} {'iters':>5s} | busbw GB/s per launch (launch order) "
          f"| max/min | p99/med inside | SM MHz per launch")
    for key in sorted(rows):
        v = sorted(rows[key])
        bws = [x[1] for x in v]
        print(f"{key[0]:7s} {key[1]:5s} {key[2]:>9d} {v[0][2]:>5d} | " + " ".join(f"{b:7.1f}" for b in bws) +
              f" | {max(bws) / min(bws):5.2f} | " + " ".join(f"{x[3]:4.2f}" for x in v) +
              " | " + " ".join(f"{x[4]:.0f}" for x in v))


if __name__ == "__main__":
    main(sys.argv[1])
