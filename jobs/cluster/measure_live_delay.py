#!/usr/bin/python3
"""Seconds from the onset of a fault to the live verdict naming it, on the
emulated cluster (cluster.sh, fault.sh, live_trial.py): --hosts (4-16) hosts,
`--pattern rounds` bw over 32K-256K, one link (never the first host's) slowed
--pct % after a case row that moves from trial to trial, so the onset falls
in the first half of the schedule. Healthy trials (no fault) count the links
named live that nothing slowed. Bounded: --trials, --healthy, --time-limit.
Writes the table and its summary (median and max delay) to --out.

  sudo jobs/cluster/measure_live_delay.py --gdrbench build/gdrbench --trials 6 --healthy 2 \\
      --out results/archive/20261203_live-verdict-delay.txt
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))
import live_trial  # noqa: E402
from gdranalysis import schedule  # noqa: E402  (the step count a real run plans)

CLUSTER = os.path.join(HERE, "cluster.sh")
ENV = dict(os.environ, GDR_CLUSTER="glv", GDR_CLUSTER_SUBNET="203", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def one(gdr, link, pct, onset_after, sizes, hosts):
    with tempfile.TemporaryDirectory() as d:
        r = live_trial.trial(gdr, ENV, d, *link, pct, onset_after=onset_after, sizes=sizes, limit_s=60 + 10 * hosts,
                             hosts=hosts)
        after = live_trial.suspects_hostlinks(gdr, r["h5"], ENV) if r["rc"] == 0 else set()
    ours = [n for n in r["named"] if set(n[:2]) == set(link)] if pct is not None else []
    others = [f"{a}>{b}" for a, b, _ in r["named"] if (a, b, _) not in ours]
    return {"link": f"{link[0]}<->{link[1]}" if pct is not None else "none", "onset_after": onset_after,
            "rc": r["rc"], "delay_s": ours[0][2] if ours else None,
            "live": [f"{a}>{b}" for a, b, _ in r["named"]], "others": others,
            "suspects_agree": all(n[:2] in after for n in ours),
            "suspects": sorted(f"{a}>{b}" for a, b in after)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gdrbench", default=os.path.join(HERE, "..", "..", "build", "gdrbench"))
    ap.add_argument("--trials", type=int, default=6, help="faulted trials (at most 20)")
    ap.add_argument("--healthy", type=int, default=2, help="trials without a fault (at most 10)")
    ap.add_argument("--pct", type=float, default=25)
    ap.add_argument("--hosts", type=int, default=4, help="emulated hosts (4-16)")
    ap.add_argument("--time-limit", type=float, default=600, help="seconds for the whole loop")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not (0 < a.trials <= 20 and 0 <= a.healthy <= 10 and 4 <= a.hosts <= 16):
        print("measure_live_delay.py: --trials 1-20, --healthy 0-10, --hosts 4-16", file=sys.stderr)
        sys.exit(2)
    gdr, rng, t0 = os.path.abspath(a.gdrbench), random.Random(a.seed), time.monotonic()
    sizes = ("32K", "256K")  # 4 sizes (doubling) of `rounds`: the onset can fall anywhere in the first half
    hosts = [f"glv{i}" for i in range(1, a.hosts + 1)]
    half = 4 * schedule.steps("rounds", a.hosts) // 2
    plan = [(tuple(sorted(rng.sample(hosts[1:], 2))), a.pct, 1 + (i * 5) % half) for i in range(a.trials)]
    plan += [(("glv2", "glv3"), None, 0)] * a.healthy
    rows = []
    subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    subprocess.run([CLUSTER, "up", str(a.hosts), "20"], env=ENV, capture_output=True, timeout=60, check=True)
    try:
        for link, pct, after in plan:
            if time.monotonic() - t0 > a.time_limit:
                break
            rows.append(one(gdr, link, pct, after, sizes, a.hosts))
            print(rows[-1], flush=True)
    finally:
        subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    load = open("/proc/loadavg").read().split()[0]
    delays = [r["delay_s"] for r in rows if r["link"] != "none" and r["delay_s"] is not None]
    faulted = [r for r in rows if r["link"] != "none"]
    lines = [f"# live verdict delay, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
             f"jobs/cluster/measure_live_delay.py --trials {a.trials} --healthy {a.healthy} --pct {a.pct:g} "
             f"--seed {a.seed} --hosts {a.hosts}; {a.hosts} emulated hosts at 20 Mbit/s, bw -T mpi rounds {sizes[0]}-{sizes[1]} "
             f"--window 2 --case-time 0.2; load average at the end {load}",
             "# link | onset after case row | run exit | delay s | live-named | others named live | suspects names"]
    for r in rows:
        lines.append(f"{r['link']} | {r['onset_after']} | {r['rc']} | {r['delay_s']} | {','.join(r['live']) or '-'} | "
                     f"{','.join(r['others']) or '-'} | {','.join(r['suspects']) or '-'}")
    if delays:
        lines.append(f"# named in {len(delays)} of {len(faulted)} faulted trials; delay from onset to the live line: "
                     f"median {statistics.median(delays):.1f} s, max {max(delays):.1f} s")
    else:
        lines.append(f"# named in 0 of {len(faulted)} faulted trials")
    lines.append(f"# live names of links nothing slowed: {sum(len(r['others']) for r in rows)} over {len(rows)} runs; "
                 f"suspects (--min-slowdown 7 --p0 0.01) named every live-named slowed direction in "
                 f"{sum(r['suspects_agree'] for r in faulted)} of {len(faulted)} faulted trials")
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
