"""How often does the analysis call something where nothing differs? Runs of
one configuration back to back, judged two ways:

    /usr/bin/python3 tests/analysis/measure_false_positives.py compare [--runs N] [--np 2]
        [--threshold 5] [--run-noise auto] [--all-pairs] [--keep DIR] [--files a.h5 ...] [-- run args]

`compare` between two runs of the SAME configuration: every case not `same` is
a false positive. Makes N real runs (default: -e 1M -n 10, the tests' default
set), compares every consecutive pair (and, with --all-pairs, every pair) and
prints the false-positive rate with the cases that drove it.

    /usr/bin/python3 tests/analysis/measure_false_positives.py suspects [--runs N] [--np 4]
        [--z 5] [--min-slowdown 25] [--keep DIR] [--files a.h5 ...] [-- run args]

`suspects` in a HEALTHY run: every run with a suspect is a false positive
(nothing was made slow). Makes N real runs (default: the run of
tests/mpi/test_suspects.py: latency and bw, 64 KiB..256 KiB, rounds and incast,
10 iterations), judges each, and prints the rate of runs with a suspect, the
rate of outliers among all comparisons, and what was named.

Either measures existing files instead with --files.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdrtest  # noqa: E402

from gdranalysis.compare import compare_runs  # noqa: E402
from gdranalysis.schema import load_run  # noqa: E402
from gdranalysis.suspects import DEFAULT_MIN_SLOWDOWN_PCT, DEFAULT_Z, analyze  # noqa: E402

COMPARE_RUN_ARGS = ["-e", "1M", "-n", "10"]
SUSPECTS_RUN_ARGS = ["-t", "latency,bw", "-T", "mpi", "-b", "64K", "-e", "256K", "-f", "4", "-n", "10", "-w", "1",
                     "--window", "16", "--pattern", "rounds,incast"]


def measure(files, *, threshold=5.0, run_noise="auto", all_pairs=False, n_resamples=9999):
    """`compare`'s false positives among runs of one configuration."""
    runs = [load_run(f) for f in files]
    pairs = (itertools.combinations(range(len(runs)), 2) if all_pairs
             else ((i, i + 1) for i in range(len(runs) - 1)))
    total = flagged = 0
    by_case = collections.Counter()
    per_pair = []
    for a, b in pairs:
        cmp = compare_runs(runs[a], runs[b], threshold_pct=threshold, run_noise=run_noise,
                           n_resamples=n_resamples)
        bad = [c for c in cmp.cases if c.verdict in ("regression", "improvement")]
        total += len(cmp.cases)
        flagged += len(bad)
        per_pair.append((os.path.basename(files[a]), os.path.basename(files[b]), len(bad),
                         len(cmp.cases), cmp.run_noise_sd))
        for c in bad:
            by_case[f"{c.label} ({c.verdict})"] += 1
    return {"flagged": flagged, "total": total, "rate": flagged / total if total else 0.0,
            "by_case": by_case, "pairs": per_pair}


def measure_suspects(files, z=DEFAULT_Z, min_slowdown=DEFAULT_MIN_SLOWDOWN_PCT):
    """`suspects`' false positives among healthy runs."""
    runs_flagged = judged = outliers = 0
    named = collections.Counter()
    for f in files:
        rep = analyze(load_run(f), z=z, min_slowdown_pct=min_slowdown)
        judged += rep.judged
        outliers += rep.outliers
        runs_flagged += bool(rep.suspects)
        for s in rep.suspects:
            named[f"{s.kind} {s.what}"] += 1
    return {"runs": len(files), "runs_flagged": runs_flagged, "judged": judged, "outliers": outliers,
            "named": named}


def same_runs(a, default_args, prefix, name, **make):
    """--files, or --runs real runs of one configuration into --keep (or a new temporary folder)."""
    if a.files:
        return a.files
    d = a.keep or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(d, exist_ok=True)
    return [gdrtest.make_run(os.path.join(d, f"{name}{i}.h5"), *(a.run_args or default_args), np=a.np, **make)
            for i in range(a.runs)]


def run_compare(a):
    m = measure(same_runs(a, COMPARE_RUN_ARGS, "gdr-fp-", "same"), threshold=a.threshold,
                run_noise=a.run_noise, all_pairs=a.all_pairs)
    for base, new, bad, n, s in m["pairs"]:
        print(f"{base} -> {new}: {bad}/{n} not same (run-to-run noise sd {100 * s:.1f}%)")
    print(f"false positives: {m['flagged']}/{m['total']} = {100 * m['rate']:.1f}% "
          f"(threshold {a.threshold:g}%, run noise {a.run_noise})")
    for k, v in m["by_case"].most_common(15):
        print(f"  {v} x {k}")


def run_suspects(a):
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")  # as tests/mpi/test_suspects.py
    m = measure_suspects(same_runs(a, SUSPECTS_RUN_ARGS, "gdr-suspects-fp-", "healthy", timeout=600),
                         a.z, a.min_slowdown)
    print(f"runs with a suspect: {m['runs_flagged']}/{m['runs']} "
          f"(z {a.z:g}, min slowdown {a.min_slowdown:g}%)")
    print(f"outliers among comparisons: {m['outliers']}/{m['judged']} = "
          f"{100 * m['outliers'] / max(m['judged'], 1):.2f}%")
    for k, v in m["named"].most_common(15):
        print(f"  {v} x {k}")


def add_runs_options(p, runs, np_):
    p.add_argument("--runs", type=int, default=runs)
    p.add_argument("--np", type=int, default=np_)
    p.add_argument("--files", nargs="+")
    p.add_argument("--keep", help="write the runs here and keep them")
    p.add_argument("run_args", nargs="*", default=None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("compare", help="compare between runs of one configuration")
    add_runs_options(c, runs=6, np_=2)
    c.add_argument("--threshold", type=float, default=5.0)
    c.add_argument("--run-noise", default="auto")
    c.add_argument("--all-pairs", action="store_true")
    c.set_defaults(func=run_compare)
    s = sub.add_parser("suspects", help="suspects in healthy runs")
    add_runs_options(s, runs=10, np_=4)
    s.add_argument("--z", type=float, default=DEFAULT_Z)
    s.add_argument("--min-slowdown", type=float, default=DEFAULT_MIN_SLOWDOWN_PCT)
    s.set_defaults(func=run_suspects)
    a = ap.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
