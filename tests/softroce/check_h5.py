#!/usr/bin/env python3
"""Checks a gdrbench HDF5 result file written inside the Soft-RoCE guest.

  check_h5.py FILE --ranks N --transport verbs [--min-cases K] [--test T]...
              [--expect-failure REGEX] [--fact KEY=REGEX]... [--path REGEX] [--peak GBPS] [--mode MODE]

Fails (exit 1, one line per problem) unless the run completed, every case
has #wrong == 0 and a times dataset of shape [ranks, iters] with a finite
value for each rank that took part, the transport's cases are all there,
and the transport's facts (device, registration) were stored. With
--expect-failure the file must instead say `failed` with an error matching
REGEX (the cases it kept are still checked). --path: every case of the
transport records a path_taken matching REGEX; --peak: and a peak_gbps of
GBPS (within 0.1 %) with a pct_peak that follows from busbw.
"""
import argparse
import math
import re
import sys

import h5py


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--transport", default="verbs")
    ap.add_argument("--min-cases", type=int, default=1)
    ap.add_argument("--test", action="append", default=[], help="a test that must appear")
    ap.add_argument("--expect-failure", metavar="REGEX")
    ap.add_argument("--fact", action="append", default=[], metavar="KEY=REGEX",
                    help="a stored fact that must match REGEX")
    ap.add_argument("--path", metavar="REGEX", help="path_taken every case of the transport must match")
    ap.add_argument("--peak", type=float, metavar="GBPS", help="peak_gbps every case of the transport must have")
    ap.add_argument("--mode", help="the transport_mode every row of the transport must carry "
                                   "(verbs --verbs-mode: imm, write, poll)")
    a = ap.parse_args()
    problems = []
    with h5py.File(a.file, "r") as f:
        if f.attrs.get("schema_version") != 2:
            problems.append(f"schema_version {f.attrs.get('schema_version')}, want 2")
        status, error = f.attrs.get("status"), f.attrs.get("error")
        if a.expect_failure:
            if status != "failed" or not re.search(a.expect_failure, error or ""):
                problems.append(f"status {status!r}, error {error!r}: want failed, "
                                f"error matching {a.expect_failure!r}")
            else:
                print(f"check_h5: {a.file}: failed as expected: {error}")
        elif status != "complete":
            problems.append(f"status {status!r}: {error}")
        if f.attrs.get("ranks") != a.ranks:
            problems.append(f"ranks {f.attrs.get('ranks')}, want {a.ranks}")
        facts = dict(f["facts"].attrs) if "facts" in f else {}
        for key in (f"{a.transport}.device", f"{a.transport}.registration"):
            if a.transport == "verbs" and key not in facts:
                problems.append(f"fact {key} missing")
        for kv in a.fact:
            key, rx = kv.split("=", 1)
            if not re.fullmatch(rx, str(facts.get(key, ""))):
                problems.append(f"fact {key} = {facts.get(key)!r}, want {rx!r}")
        ours, tests = 0, set()
        for name, g in f["cases"].items():
            at = dict(g.attrs)
            label = f"case {name} ({at.get('test')} {at.get('transport')} {at.get('dtype')} " \
                    f"{at.get('op')} {at.get('bytes')} B)"
            if at.get("wrong") != 0:
                problems.append(f"{label}: #wrong = {at.get('wrong')}")
            times = g["times"][()]
            if times.shape != (a.ranks, at["iters"]):
                problems.append(f"{label}: times shape {times.shape}")
            if not any(all(math.isfinite(t) and t > 0 for t in row) for row in times):
                problems.append(f"{label}: no rank has a full row of positive times")
            if at.get("transport") == a.transport and not at.get("reference"):
                ours += 1
                if a.mode and at.get("transport_mode") != a.mode:
                    problems.append(f"{label}: transport_mode {at.get('transport_mode')!r}, "
                                    f"want {a.mode!r}")
                tests.add(at.get("test"))
                if a.path and not re.fullmatch(a.path, str(at.get("path_taken"))):
                    problems.append(f"{label}: path_taken {at.get('path_taken')!r}, want {a.path!r}")
                if a.peak is not None:
                    peak, pct, busbw = at.get("peak_gbps"), at.get("pct_peak"), at.get("busbw_gbps")
                    both = 2 if at.get("test") == "bibw" else 1
                    if not (peak and abs(peak - a.peak) <= a.peak * 1e-3):
                        problems.append(f"{label}: peak_gbps {peak} ({at.get('peak_source')}), want {a.peak}")
                    elif not abs(pct - busbw / (both * peak) * 100) <= 1e-9 * max(1.0, pct):
                        problems.append(f"{label}: pct_peak {pct} != busbw {busbw} / {both} x {peak}")
        if ours < a.min_cases:
            problems.append(f"{ours} {a.transport} cases, want at least {a.min_cases}")
        for t in a.test:
            if t not in tests:
                problems.append(f"no {t} case over {a.transport}")
    for p in problems:
        print(f"check_h5: {a.file}: {p}")
    if not problems:
        print(f"check_h5: {a.file}: ok ({ours} {a.transport} cases, all #wrong = 0)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
