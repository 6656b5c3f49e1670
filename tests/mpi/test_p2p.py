"""Point-to-point tests under a real mpirun, for each --pairs mode: the
right pairs appear, and only the ranks of a pair record times."""
import argparse
import os

import numpy as np

from gdrtest import *  # noqa: F401,F403


def expected_pairs(mode, n):
    if mode == "default":
        return [(0, n // 2)]
    return [(i, j) for i in range(n) for j in range(n)
            if i != j and (mode == "all" or j == (i + 1) % n)]


def run(np_, mode):
    d = tmpdir()
    h5, js = os.path.join(d, "p.h5"), os.path.join(d, "p.jsonl")
    args = ["run", "-t", "latency,bw,bibw", "-T", "mpi", "-b", "1", "-e", "64K", "-f", "16",
            "-n", "3", "-w", "1", "--window", "8", "--output", h5, "--json", js]
    if mode != "default":
        args += ["--pairs", mode]
    p = mpirun(np_, args)
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    check("reference 'mpi' applies to allreduce only" in p.stdout, "no note about the skipped reference")
    rows = read_jsonl(js)
    pairs = expected_pairs(mode, np_)
    sizes = [1, 16, 256, 4096, 65536]
    check(len(rows) == 3 * len(sizes) * len(pairs), f"{len(rows)} rows for {len(pairs)} pairs")
    root, cases = read_cases(h5)
    seen = []
    for (attrs, times), r in zip(cases, rows):
        check(r["dtype"] == "byte" and r["op"] == "none" and not r["reference"], f"{r}")
        check(r["count"] == r["bytes"], f"{r}")
        src, dst = int(attrs["src"]), int(attrs["dst"])
        seen.append((attrs["test"], int(attrs["bytes"]), src, dst))
        finite = [bool(np.all(np.isfinite(times[k]))) for k in range(np_)]
        takers = {src} if attrs["test"] == "latency" else {src, dst}
        check(finite == [k in takers for k in range(np_)],
              f"{attrs['test']} {src}->{dst}: ranks with times {finite}")
        check_case_consistency(attrs, times, np_)
        factor = 2 if attrs["test"] == "bibw" else 1
        bw = factor * attrs["bytes"] / (attrs["time_us_mean"] * 1e-6) / 1e9
        check(abs(bw - r["algbw_gbps"]) <= 1e-3 * bw, f"algbw {r['algbw_gbps']} != {bw}")
    for test in ("latency", "bw", "bibw"):
        for s in sizes:
            for src, dst in pairs:
                check((test, s, src, dst) in seen, f"missing {test} {s} {src}->{dst}")


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, required=True)
    a.add_argument("--pairs", default="default")
    args = a.parse_args()
    main(lambda: run(args.np, args.pairs))
