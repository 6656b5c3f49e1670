#!/usr/bin/python3
"""Judge recorded fault trials again with the analysis as it is now: a change to the model
(factor_model.py, tails.py, validate_config.py) is measured on faults already run, in seconds, not
in hours of emulated cluster: the model on the run file, configuration drift and loss by TCP's
counts on doctor's reads beside it (doctor.json, counters-end.json; --timing-only without them).

  jobs/cluster/rejudge_trials.py results/archive/20261205_cluster8_validate-by-fault-class-model.jsonl \
      --runs DIR     # DIR/gen-<hosts>-<seq>/run1.h5, as measure_validate.py --gen left them
                     # (results/archive/20261205_cluster_generated-fault-runs.tar.xz unpacked)

Prints, per trial, the truth, what validate named then, and what the model names now; then per
class: bad hosts named (recall) and healthy hosts named, then and now, with Wilson intervals, and
where a fault was run twice (measure_validate.py --rerun), how often each host got the same verdict.
Exit 1 when a trial's files are missing. Two loops at one host count both start at seq 0: give each
JSONL its own --runs, in order.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))

from gdranalysis.intervals import wilson  # noqa: E402
from gdranalysis.schema import load_run  # noqa: E402
from gdranalysis.validate_config import drift, lossy, read_doctor  # noqa: E402
from gdranalysis.validate_verdict import model_verdict  # noqa: E402

TIMING_CLASSES = ("steady", "late", "intermittent", "loss", "stall")


def truth(t, a):
    """The hosts the verdict should name: every bad host, or with --timing-only the trial's bad
    hosts less its configuration drifts (for folders without doctor's reads)."""
    keep = TIMING_CLASSES if a.timing_only else TIMING_CLASSES + ("config",)
    return {f["host"] for f in t["fault"]["faults"] if f["class"] in keep and f.get("host")}


def now_named(path, a):
    """{host: class} the analysis names now: the model's timing findings (a link names both its
    hosts, as validate's verdict does), and where the trial's folder holds doctor's reads
    (doctor.json, counters-end.json), configuration drift and loss by TCP's counts as validate
    adds them."""
    d = os.path.dirname(path)
    before = read_doctor(os.path.join(d, "doctor.json"))
    after = read_doctor(os.path.join(d, "counters-end.json"))
    hosts = sorted(before)
    counted = lossy(before, after, [h for h in hosts if h in after])   # as validate: first, a shield
    _, found, _ = model_verdict(load_run(path), None, a.z, a.min_slowdown, a.p0, {f.what for f in counted})
    named = {}
    for f in found:   # as validate's host verdicts: every host of a finding, both ends of a link
        for h in f.hosts:
            named.setdefault(h, f"link {f.what}" if f.kind == "link" else f.cls)
    for f in drift(before, hosts):
        named.setdefault(f.what, f.cls)
    for f in counted:
        named.setdefault(f.what, f.cls)
    return named


def fmt(k, n):
    if not n:
        return "-"
    lo, hi = wilson(k, n)
    return f"{k}/{n} [{lo:.2f}, {hi:.2f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--runs", action="append",
                    help="the trials' folders (default /tmp/gdr-measure-validate); once for every JSONL, in "
                    "their order, where loops of the same host count left the same gen-<hosts>-<seq> names")
    ap.add_argument("--z", type=float, default=5.0)
    ap.add_argument("--min-slowdown", type=float, default=7.0)
    ap.add_argument("--p0", type=float, default=0.01)
    ap.add_argument("--quiet", action="store_true", help="the per-class table only")
    ap.add_argument("--timing-only", action="store_true",
                    help="judge the timing verdicts only (folders without doctor's reads: drift and TCP counts unjudged)")
    a = ap.parse_args()
    tally, missing, pairs = {}, 0, {}
    runs_of = a.runs or ["/tmp/gdr-measure-validate"]
    if len(runs_of) not in (1, len(a.jsonl)):
        ap.error(f"--runs: give one folder, or one for each of the {len(a.jsonl)} JSONL files")
    for i, path in enumerate(a.jsonl):
        runs = runs_of[i if len(runs_of) > 1 else 0]
        for line in open(path, encoding="utf-8"):
            t = json.loads(line)
            if "fault" not in t or "status" not in t:
                continue
            run = os.path.join(runs, f"gen-{t['hosts']}-{t['seq']}", "run1.h5")
            if not os.path.exists(run):
                print(f"missing: {run}", file=sys.stderr)
                missing += 1
                continue
            bad, hosts = truth(t, a), set(t["status"])
            then = set(t["named"])
            now = now_named(run, a)
            if a.timing_only:
                drifted = {f["host"] for f in t["fault"]["faults"] if f["class"] == "config"}
                then, now = then - drifted, {h: c for h, c in now.items() if h not in drifted}
            pairs.setdefault((t["hosts"], t["seed"]), []).append({h: h in now for h in hosts})
            cls = t["fault"]["class"]
            row = tally.setdefault((t["hosts"], cls), [0] * 8)
            for i, named in enumerate((then, set(now))):
                row[4 * i:4 * i + 4] = [row[4 * i] + len(named & bad), row[4 * i + 1] + len(bad),
                                        row[4 * i + 2] + len(named - bad), row[4 * i + 3] + len(hosts - bad)]
            if not a.quiet:
                cmds = "; ".join(" ".join(c) for c in t["fault"]["commands"])
                print(f"{t['hosts']}h {cls:12} {cmds[:60]:60} bad {','.join(sorted(bad)) or '-':9} "
                      f"then {','.join(sorted(then)) or '-':9} now "
                      f"{', '.join(f'{h}: {c}' for h, c in sorted(now.items())) or '-'}")
    print("| hosts | class | recall then | recall now | healthy named then | healthy named now |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (h, cls), r in sorted(tally.items()):
        print(f"| {h} | {cls} | {fmt(r[0], r[1])} | {fmt(r[4], r[5])} | {fmt(r[2], r[3])} | {fmt(r[6], r[7])} |")
    same = tot = 0
    for runs in pairs.values():
        if len(runs) == 2:
            same += sum(runs[0][h] == runs[1].get(h) for h in runs[0])
            tot += len(runs[0])
    if tot:
        print(f"rerun agreement now (the same drawn fault run twice; each host named or not): {fmt(same, tot)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
