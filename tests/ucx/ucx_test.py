#!/usr/bin/python3
"""Real mpirun launches of `gdrbench run -T ucx`, checked from the files they write.

    ucx_test.py allreduce --np N [--chunk SIZE] [-b MIN -e MAX -f FACTOR]
    ucx_test.py p2p --np N [--pairs ring|all]
    ucx_test.py cuda-direct          (-m cuda --path direct must fail clearly)
    ucx_test.py --selftest           (the checker rejects broken results)

Exit 0 on success, 1 listing every failed check. Needs /usr/bin/python3 with
Debian's python3-h5py and python3-numpy. GDRBENCH names the binary.

Every row of the --json file and every case of the HDF5 file must report
wrong == 0, the rows must be exactly the ones the sweep implies (every dtype
x op x size for allreduce; the pairs for p2p), and the HDF5 file must be
complete with every rank's finite times and the ucx.* facts.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

# The launcher environment and the datatype tables are shared with the mpi tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from gdrtest import DTYPE_SIZE, OPS, env  # noqa: E402

GDRBENCH = os.environ.get("GDRBENCH", "gdrbench")
P2P = ["latency", "bw", "bibw"]
# Few iterations: this is about correctness on a loaded 2-core machine.
ITERS = ["-n", "3", "-w", "1"]


def mpirun(np_, args, timeout=500):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np_), GDRBENCH] + args
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env())


def sweep(lo, hi, factor):
    """The sizes gdrbench's size_sweep produces (same double arithmetic)."""
    out, s = [], float(lo)
    while s <= float(hi):
        out.append(int(s))
        s *= factor
    return out


def pairs_for(kind, n):
    if kind == "ring":
        return [(i, (i + 1) % n) for i in range(n)]
    if kind == "all":
        return [(a, b) for a in range(n) for b in range(n) if a != b]
    return [(0, n // 2)]


def expected_allreduce(sizes):
    rows = set()
    for d, unit in DTYPE_SIZE.items():
        for op in OPS:
            for b in sizes:
                if b // unit:
                    rows.add(("allreduce", d, op, (b // unit) * unit))
    return rows


def expected_p2p(sizes):
    return {(t, "byte", "none", b) for t in P2P for b in sizes}


def s(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return s(v.item())
    return v


def check_rows(rows, expected, ranks, per_key):
    """JSON Lines rows: all ucx, right ranks, wrong == 0, exactly the expected keys."""
    errors = []
    seen = {}
    for r in rows:
        key = (r.get("test"), r.get("dtype"), r.get("op"), r.get("bytes"))
        seen[key] = seen.get(key, 0) + 1
        if r.get("transport") != "ucx" or r.get("reference"):
            errors.append(f"row {key} has transport {r.get('transport')!r} reference {r.get('reference')}")
        if r.get("ranks") != ranks:
            errors.append(f"row {key} ran on {r.get('ranks')} ranks, want {ranks}")
        if r.get("wrong") != 0:
            errors.append(f"row {key}: wrong = {r.get('wrong')}")
        if not isinstance(r.get("time_us_mean"), (int, float)) or not r["time_us_mean"] > 0:
            errors.append(f"row {key}: time_us_mean {r.get('time_us_mean')!r} is not positive")
    missing = sorted(expected - set(seen))
    extra = sorted(set(seen) - expected)
    if missing:
        errors.append(f"{len(missing)} expected rows missing, e.g. {missing[:4]}")
    if extra:
        errors.append(f"{len(extra)} unexpected rows, e.g. {extra[:4]}")
    for k, c in seen.items():
        if c != per_key:
            errors.append(f"row {k} appears {c} times, want {per_key}")
    return errors


def check_h5(path, ranks, nrows):
    errors = []
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # noqa: BLE001 - any unreadable file fails
        return [f"cannot open {path}: {e}"]
    with f:
        a = f.attrs
        if s(a.get("status")) != "complete":
            errors.append(f"status {s(a.get('status'))!r} ({s(a.get('error'))!r}), want complete")
        n = len(f["cases"]) if "cases" in f else 0
        if n != nrows or s(a.get("cases_completed")) != nrows:
            errors.append(f"{n} cases (cases_completed {s(a.get('cases_completed'))}), want {nrows}")
        facts = dict(f["facts"].attrs) if "facts" in f else {}
        for k in ("ucx.version", "ucx.cuda", "ucx.memory_types", "ucx.library"):
            if not s(facts.get(k, "")):
                errors.append(f"/facts lacks {k}")
        # Without CUDA the fact must say why and how to fix it.
        cuda = s(facts.get("ucx.cuda", ""))
        if cuda and cuda != "yes" and not (cuda.startswith("no: ") and (
                "--with-cuda" in cuda or "no gpu" in cuda.lower())):
            errors.append(f"ucx.cuda fact {cuda!r} is neither 'yes' nor a reason with a fix")
        for name, g in (f["cases"].items() if "cases" in f else []):
            c = {k: s(v) for k, v in g.attrs.items()}
            if c.get("wrong") != 0:
                errors.append(f"case {name} ({c.get('test')} {c.get('dtype')} {c.get('op')} "
                              f"{c.get('bytes')} B): wrong = {c.get('wrong')}")
            if c.get("transport") != "ucx":
                errors.append(f"case {name}: transport {c.get('transport')!r}")
            t = g["times"][()]
            if t.shape != (ranks, c.get("iters")):
                errors.append(f"case {name}: times shape {t.shape}, want ({ranks}, {c.get('iters')})")
                continue
            # p2p: ranks outside the pair (and a latency responder) sit out with NaN.
            busy = t[~np.all(np.isnan(t), axis=1)]
            if busy.size == 0 or not np.all(np.isfinite(busy)) or not np.all(busy > 0):
                errors.append(f"case {name}: times not finite and positive for the ranks that ran")
    return errors


def run_and_check(np_, args, expected, per_key):
    d = tempfile.mkdtemp(prefix="gdr-ucx-")
    h5, js = os.path.join(d, "r.h5"), os.path.join(d, "r.jsonl")
    p = mpirun(np_, ["run", "-T", "ucx", "--reference", "none", "--output", h5, "--json", js,
                     "--timeout", "120"] + ITERS + args)
    if p.returncode != 0:
        return [f"gdrbench exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"]
    with open(js) as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    errors = check_rows(rows, expected, np_, per_key)
    errors += check_h5(h5, np_, len(rows))
    if not errors:
        print(f"ok: {len(rows)} rows, all wrong == 0 ({d})")
    return errors


def test_allreduce(a):
    sizes = sweep(a.b, a.e, a.f)
    args = ["-t", "allreduce", "-d", ",".join(DTYPE_SIZE), "-o", ",".join(OPS),
            "-b", str(a.b), "-e", str(a.e), "-f", str(a.f)]
    if a.chunk:
        args += ["--chunk", a.chunk]
    return run_and_check(a.np, args, expected_allreduce(sizes), 1)


def test_p2p(a):
    sizes = sweep(a.b, a.e, a.f)
    args = ["-t", ",".join(P2P), "-b", str(a.b), "-e", str(a.e), "-f", str(a.f), "--window", "8"]
    if a.pairs:
        args += ["--pairs", a.pairs]
    return run_and_check(a.np, args, expected_p2p(sizes), len(pairs_for(a.pairs, a.np)))


def test_cuda_direct(_):
    """-m cuda --path direct over ucx: exit 2, and a message saying why."""
    p = mpirun(2, ["run", "-T", "ucx", "-m", "cuda", "--path", "direct", "-t", "bw", "-e", "64",
                   "--output", os.path.join(tempfile.mkdtemp(prefix="gdr-ucx-"), "r.h5")], timeout=120)
    out = p.stdout + p.stderr
    print(out[-2000:])
    if p.returncode != 2:
        return [f"exit status {p.returncode}, want 2 (usage error)"]
    low = out.lower()
    # Either the UCX refusal (which must say this UCX lacks CUDA and name
    # the fix), or, in a gdrbench without a CUDA memory kind, that refusal.
    if "built without cuda" in low and ("--with-cuda" in low or "ucx_root" in low):
        return []
    if "without cuda memory support" in low:
        return []
    # A gdrbench that checks the memory kind first, on a node without a GPU.
    if "-m cuda:" in low and ("no cuda device" in low or "no gpu" in low):
        return []
    return [f"the error does not say that CUDA support is missing and how to get it:\n{out[-1500:]}"]


def selftest(_):
    """The checks must reject wrong counts, missing rows and broken files."""
    exp = expected_allreduce([8, 12])
    good = [{"test": t, "transport": "ucx", "reference": False, "dtype": d, "op": o, "bytes": b,
             "ranks": 2, "wrong": 0, "time_us_mean": 1.0} for (t, d, o, b) in exp]
    errors = []
    if check_rows(good, exp, 2, 1):
        errors.append(f"good rows rejected: {check_rows(good, exp, 2, 1)}")
    bad_wrong = [dict(r) for r in good]
    bad_wrong[3]["wrong"] = 1
    variants = {"a wrong element": bad_wrong, "a missing row": good[1:],
                "a duplicated row": good + good[:1],
                "another transport": [dict(good[0], transport="mpi")] + good[1:]}
    for what, rows in variants.items():
        if not check_rows(rows, exp, 2, 1):
            errors.append(f"rows with {what} accepted")
    d = tempfile.mkdtemp(prefix="gdr-ucx-self-")
    path = os.path.join(d, "bad.h5")
    with h5py.File(path, "w") as f:
        f.attrs["status"] = "complete"
        f.attrs["cases_completed"] = 1
        f.create_group("facts").attrs["ucx.version"] = "1.13.1"
        g = f.create_group("cases/00000")
        g.attrs.update({"wrong": 2, "transport": "ucx", "iters": 2, "test": "allreduce"})
        g["times"] = np.ones((2, 2))
    if not check_h5(path, 2, 1):
        errors.append("HDF5 file with wrong elements and missing facts accepted")
    if not errors:
        print("selftest: the checker rejects every broken variant")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", choices=["allreduce", "p2p", "cuda-direct"])
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--pairs", default="")
    ap.add_argument("--chunk", default="")
    ap.add_argument("-b", type=int, default=7)
    ap.add_argument("-e", type=int, default=3 << 20)
    ap.add_argument("-f", type=float, default=13)
    a = ap.parse_args()
    fn = selftest if a.selftest else {"allreduce": test_allreduce, "p2p": test_p2p,
                                      "cuda-direct": test_cuda_direct}.get(a.what)
    if fn is None:
        ap.error("name a test or --selftest")
    errors = fn(a)
    for e in errors:
        print("FAIL:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
