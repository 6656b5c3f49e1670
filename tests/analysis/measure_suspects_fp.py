"""How often does `suspects` name something in a HEALTHY run? Every run
with a suspect is a false positive (nothing was made slow).

    /usr/bin/python3 tests/analysis/measure_suspects_fp.py [--runs N] [--np 4]
        [--z 5] [--min-slowdown 25] [--keep DIR] [--files a.h5 ...] [-- run args]

makes N real runs back to back (default: the run of tests/mpi/test_suspects.py:
latency and bw, 64 KiB..256 KiB, rounds and incast, 10 iterations), judges each,
and prints the rate of runs with a suspect, the rate of outliers among all
comparisons, and what was named.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdrtest  # noqa: E402

from gdranalysis.schema import load_run  # noqa: E402
from gdranalysis.suspects import DEFAULT_MIN_SLOWDOWN_PCT, DEFAULT_Z, analyze  # noqa: E402

DEFAULT_RUN_ARGS = ["-t", "latency,bw", "-T", "mpi", "-b", "64K", "-e", "256K", "-f", "4", "-n", "10", "-w", "1",
                    "--window", "16", "--pattern", "rounds,incast"]


def measure(files, z=DEFAULT_Z, min_slowdown=DEFAULT_MIN_SLOWDOWN_PCT):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--z", type=float, default=DEFAULT_Z)
    ap.add_argument("--min-slowdown", type=float, default=DEFAULT_MIN_SLOWDOWN_PCT)
    ap.add_argument("--files", nargs="+")
    ap.add_argument("--keep", help="write the runs here and keep them")
    ap.add_argument("run_args", nargs="*", default=None)
    a = ap.parse_args()
    files = a.files
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")  # as tests/mpi/test_suspects.py
    if not files:
        d = a.keep or tempfile.mkdtemp(prefix="gdr-suspects-fp-")
        os.makedirs(d, exist_ok=True)
        files = [gdrtest.make_run(os.path.join(d, f"healthy{i}.h5"), *(a.run_args or DEFAULT_RUN_ARGS), np=a.np,
                                  timeout=600) for i in range(a.runs)]
    m = measure(files, a.z, a.min_slowdown)
    print(f"runs with a suspect: {m['runs_flagged']}/{m['runs']} "
          f"(z {a.z:g}, min slowdown {a.min_slowdown:g}%)")
    print(f"outliers among comparisons: {m['outliers']}/{m['judged']} = "
          f"{100 * m['outliers'] / max(m['judged'], 1):.2f}%")
    for k, v in m["named"].most_common(15):
        print(f"  {v} x {k}")


if __name__ == "__main__":
    main()
