"""Concurrent patterns under a real mpirun: every step of every
pattern is a case whose flows are stored; exactly the ranks that time in a
step have times; every byte is checked (clean: 0 wrong; GDR_SELFTEST_CORRUPT:
one wrong byte per case, exit 1); the /links matrices cover every ordered
pair from the rounds pattern, and equal what gdranalysis recomputes from the
cases. The schedules themselves are unit-tested (tests/unit/test_patterns.cpp)."""
import argparse
import os
import sys

import h5py
import numpy as np

from gdrtest import *  # noqa: F401,F403

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results"))
from gdranalysis.links import tables_from_cases  # noqa: E402
from gdranalysis.schema import load_run  # noqa: E402
from gdranalysis.schema_patterns import read_links  # noqa: E402

TESTS = ["latency", "bw", "bibw"]
PATTERNS = ["rounds", "incast", "fanout", "neighbor"]
SIZES = [8, 4096]


def steps(pattern, test, n):
    if pattern == "rounds":
        r = n if n % 2 else n - 1
        return r if test == "bibw" else 2 * r
    return n if pattern in ("incast", "fanout") else 1


def run(np_, transport, env_extra=None):
    d = tmpdir()
    h5 = os.path.join(d, "p.h5")
    args = ["run", "-t", ",".join(TESTS), "-T", transport, "-b", "8", "-e", "4K", "-f", "512",
            "-n", "3", "-w", "1", "--window", "8", "--pattern", "pair," + ",".join(PATTERNS),
            "--pairs", "all", "--output", h5]
    return mpirun(np_, args, extra_env=env_extra), h5


def timers(test, flows):
    """Ranks with a time in a step: initiators (latency), every end (bw, bibw)."""
    return {a for a, _ in flows} if test == "latency" else {r for f in flows for r in f}


def clean(np_, transport):
    p, h5 = run(np_, transport)
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    check("bw@rounds0" in p.stdout and "latency@incast" in p.stdout, f"no pattern rows in the table\n{p.stdout}")
    counts = {}
    with h5py.File(h5, "r") as f:
        for _, g in sorted(f["cases"].items()):
            a = dict(g.attrs)
            check(int(a["wrong"]) == 0, f"wrong bytes in a clean run: {dict(a)}")
            if "pattern" not in a:
                continue
            pat, test, step = a["pattern"], a["test"], int(a["step"])
            flows = [tuple(x) for x in g["flows"][()]]
            check(len(flows) > 0, f"{pat} step {step}: no flows")
            t = g["times"][()]
            has = {r for r in range(np_) if np.all(np.isfinite(t[r]))}
            check(has == timers(test, flows), f"{test} {pat} step {step} flows {flows}: ranks with times {has}")
            check(np.all(np.isnan(t[[r for r in range(np_) if r not in has]])), "a rank outside the flows has a time")
            counts[(pat, test, int(a["bytes"]))] = counts.get((pat, test, int(a["bytes"])), 0) + 1
        for pat in PATTERNS:
            for test in TESTS:
                for s in SIZES:
                    check(counts.get((pat, test, s)) == steps(pat, test, np_),
                          f"{pat} {test} {s}: {counts.get((pat, test, s))} cases, want {steps(pat, test, np_)}")
        check("links" not in f, "a dense /links group: new files write /link_cells")
        links = {n: g for n, g in f["link_cells"].items()}
        for test in TESTS:
            for pat in ("pair", "rounds"):
                name = f"{test}_{transport}_host_direct_{pat}"
                g = links[name]
                check(list(g["bytes"][()]) == SIZES, f"link sizes {g['bytes'][()]}")
                # One cell per link measured, not ranks x ranks: every ordered pair, each size once.
                check(len(g["time_us"]) == len(SIZES) * np_ * (np_ - 1), f"{name}: {len(g['time_us'])} cells")
                m = read_links(h5, f, np_)[name]["time_us"]
                check(m.shape == (len(SIZES), np_, np_), f"matrix shape {m.shape}")
                off = ~np.eye(np_, dtype=bool)
                check(np.all(np.isfinite(m[:, off])) and np.all(m[:, off] > 0), f"{test} {pat}: a link unmeasured\n{m}")
                check(np.all(np.isnan(m[:, ~off])), "the diagonal must be empty")
                check(np.all(np.isfinite(read_links(h5, f, np_)[name]["algbw_gbps"][:, off])), "algbw missing")
    run_ = load_run(h5)
    py = {t.name: t for t in tables_from_cases(run_)}
    for name, g in run_.links.items():
        check(np.allclose(g["time_us"], py[name].time_us, equal_nan=True, rtol=1e-12),
              f"{name}: /links differs from the cases")


def corrupt(np_, transport):
    p, h5 = run(np_, transport, {"GDR_SELFTEST_CORRUPT": "1"})
    check(p.returncode == 4, f"exit {p.returncode} with a corrupted byte per case\n{p.stderr}")
    with h5py.File(h5, "r") as f:
        for _, g in sorted(f["cases"].items()):
            if "pattern" in g.attrs:
                check(int(g.attrs["wrong"]) >= 1, f"{dict(g.attrs)}: the corrupted byte was not counted")


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, required=True)
    a.add_argument("-T", default="mpi")
    args = a.parse_args()
    main(lambda: (clean(args.np, args.T), corrupt(args.np, args.T)))
