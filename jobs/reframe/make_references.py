#!/usr/bin/env python3
"""ReFrame references for gdrbench_checks.py from an archived run.

    make_references.py results/archive/RUN.h5 --system local:default [-o references.json]

For every test/transport/memory/path of the run (its sweep points, as
`gdrbench export --openmetrics` computes them, which is what the check reads)
it writes the check's performance variables with bounds: busbw per size may
fall at most --tolerance below the archived value (0.10: to 90 %), and the
median time per size rise by as much (to 1/0.90 = 111 %). Several --system entries share them.
--scale multiplies the archived values (1000: an impossible reference, to see
a check fail on performance). Exit 2 with one line on bad input.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(HERE, "..", "..", "results"), os.path.join(HERE, "..", "..")):
    if os.path.isdir(os.path.join(p, "gdranalysis")):   # source tree, then share/gdrbench
        sys.path.insert(0, os.path.abspath(p))
        break

from gdranalysis import load_run  # noqa: E402  (after the path set-up)
from gdranalysis.openmetrics import sweep_points  # noqa: E402
from gdranalysis.schema import InputError  # noqa: E402


def references(run, tolerance, scale):
    """{check key: {perf variable: [value, lower, upper, unit]}} for the run's pair/collective cases."""
    by_check = {}
    for (test, tr, ref, mem, path, dtype, size, pattern, ranks), p in sweep_points(run).items():
        if ref or pattern not in ("pair", "none"):  # the check runs one pair, or a collective
            continue
        by_check.setdefault((test, tr, mem), {}).setdefault(path, {})[size] = p
    out = {}
    for (test, tr, mem), paths in by_check.items():
        combos = [(p, [p], False) for p in paths] + ([("direct,staged", ["direct", "staged"], True)]
                                                    if {"direct", "staged"} <= set(paths) else [])
        for key_path, used, suffixed in combos:
            refs = {}
            for path in used:
                sfx = f"_{path}" if suffixed else ""
                for size, p in sorted(paths[path].items()):
                    if p["busbw"] > 0:
                        refs[f"busbw_{size}{sfx}"] = [p["busbw"] / 1e9 * scale, -tolerance, None, "GB/s"]
                    if p["latency"] > 0:
                        # The same bound in time: busbw down to (1 - t) is time up to 1 / (1 - t).
                        refs[f"time_us_{size}{sfx}"] = [p["latency"] * 1e6 / scale, None, 1 / (1 - tolerance) - 1, "us"]
            out[f"{test}/{tr}/{mem}/{key_path}"] = refs
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", metavar="RUN.h5")
    ap.add_argument("--system", action="append", required=True, metavar="SYSTEM:PARTITION",
                    help="ReFrame system:partition the references are for (repeatable; '*' for any)")
    ap.add_argument("--tolerance", type=float, default=0.10, help="allowed fraction below (time: above), default 0.10")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the archived values (default 1)")
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "references.json"))
    a = ap.parse_args(argv)
    if not (0 <= a.tolerance < 1) or not a.scale > 0:
        print("make_references.py: --tolerance must be in [0, 1) and --scale > 0", file=sys.stderr)
        return 2
    try:
        run = load_run(a.run)
    except InputError as e:
        print(f"make_references.py: {e}", file=sys.stderr)
        return 2
    refs = references(run.run, a.tolerance, a.scale)
    if not refs:
        print(f"make_references.py: {a.run}: no case to take a reference from", file=sys.stderr)
        return 2
    doc = {"source": os.path.basename(a.run), "commit": run.commit, "tolerance": a.tolerance, "scale": a.scale,
           "references": {s: refs for s in a.system}}
    with open(a.output, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{a.output}: {sum(len(v) for v in refs.values())} references for {len(refs)} checks "
          f"from {os.path.basename(a.run)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
