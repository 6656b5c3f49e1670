"""How often does `compare` call a difference between two runs of the SAME
configuration? Every case not `same` is a false positive.

    /usr/bin/python3 tests/analysis/measure_false_positives.py [--runs N] [--np 2]
        [--threshold 5] [--run-noise auto] [--keep DIR] [-- gdrbench run args]

makes N real runs back to back (default: -e 1M -n 10, the tests' default
set), compares every consecutive pair (and, with --all-pairs, every pair)
and prints the false-positive rate with the cases that drove it. Existing
files can be measured instead with --files a.h5 b.h5 ...
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

DEFAULT_RUN_ARGS = ["-e", "1M", "-n", "10"]


def measure(files, *, threshold=5.0, run_noise="auto", all_pairs=False, n_resamples=9999):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=5.0)
    ap.add_argument("--run-noise", default="auto")
    ap.add_argument("--all-pairs", action="store_true")
    ap.add_argument("--files", nargs="+")
    ap.add_argument("--keep", help="write the runs here and keep them")
    ap.add_argument("run_args", nargs="*", default=None)
    a = ap.parse_args()
    files = a.files
    if not files:
        d = a.keep or tempfile.mkdtemp(prefix="gdr-fp-")
        os.makedirs(d, exist_ok=True)
        files = [gdrtest.make_run(os.path.join(d, f"same{i}.h5"), *(a.run_args or DEFAULT_RUN_ARGS), np=a.np)
                 for i in range(a.runs)]
    m = measure(files, threshold=a.threshold, run_noise=a.run_noise, all_pairs=a.all_pairs)
    for base, new, bad, n, s in m["pairs"]:
        print(f"{base} -> {new}: {bad}/{n} not same (run-to-run noise sd {100 * s:.1f}%)")
    print(f"false positives: {m['flagged']}/{m['total']} = {100 * m['rate']:.1f}% "
          f"(threshold {a.threshold:g}%, run noise {a.run_noise})")
    for k, v in m["by_case"].most_common(15):
        print(f"  {v} x {k}")


if __name__ == "__main__":
    main()
