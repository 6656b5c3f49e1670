"""Shared helpers for the analysis tests: real gdrbench runs under mpirun,
and h5py edits of their files (scaled cases, other schema versions...)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(REPO, "results")
if RESULTS not in sys.path:
    sys.path.insert(0, RESULTS)

PYTHON = os.environ.get("GDR_PYTHON", "/usr/bin/python3")


def gdrbench() -> str | None:
    """The binary: $GDRBENCH (ctest passes $<TARGET_FILE:gdrbench>), else build/gdrbench."""
    for p in (os.environ.get("GDRBENCH"), os.path.join(REPO, "build", "gdrbench")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    return env


def make_run(path, *args, np=2, timeout=180):
    """A real run: mpirun -np N gdrbench run ARGS --output PATH."""
    exe = gdrbench()
    if exe is None:
        raise unittest.SkipTest("no gdrbench binary (set GDRBENCH or build into build/)")
    if shutil.which("mpirun") is None:
        raise unittest.SkipTest("no mpirun")
    # One transport unless a test asks otherwise: the default set depends on
    # what this machine has built in, and the tests count cases.
    transport = [] if ("-T" in args or "--transport" in args) else ["-T", "mpi"]
    cmd = ["mpirun", "--oversubscribe", "-np", str(np), exe, "run", *transport, *args,
           "--output", path, "--force"]
    r = subprocess.run(cmd, env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if r.returncode != 0 or not os.path.exists(path):
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return path


def analysis(*args, timeout=300, env_extra=None):
    """python3 -m gdranalysis ARGS -> CompletedProcess (text)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    env["PYTHONPATH"] = RESULTS + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([PYTHON, "-m", "gdranalysis", *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def copy(src, dst):
    shutil.copyfile(src, dst)
    return dst


def scale_case(path, case, factor, rank=None):
    """Multiply a case's times (one rank's, or every rank's) in place."""
    import h5py
    with h5py.File(path, "r+") as f:
        d = f[f"cases/{case}/times"]
        t = d[()]
        if rank is None:
            t = t * factor
        else:
            t[rank] = t[rank] * factor
        d[...] = t


def scale_past_spread(path, case, minimum=1.5):
    """Slow a case (every rank) by at least `minimum` and past the spread of its own
    slowest-rank times, so that no bootstrap resample can read it as within a few
    percent, whatever the machine's load did to its iterations. Returns the factor."""
    from gdranalysis.schema import load_run
    import numpy as np
    c = next(c for c in load_run(path).cases if c.name == case)
    t = c.slowest()
    t = t[np.isfinite(t) & (t > 0)]
    factor = max(minimum, 1.2 * float(t.max() / t.min()))
    scale_case(path, case, factor)
    return factor


def set_root_attr(path, name, value):
    import h5py
    with h5py.File(path, "r+") as f:
        if value is None:
            del f.attrs[name]
        else:
            f.attrs[name] = value


class TempDirCase(unittest.TestCase):
    """A TestCase with a class-wide temporary directory `cls.tmp`."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=f"gdranalysis-{cls.__name__}-")

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("GDR_KEEP_TEST_FILES"):
            print(f"kept {cls.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.tmp, name)


def quiet_with_slow_rank(src, dst, rank, factor=4.0, hosts=None, seed=3):
    """A copy of a --pattern run whose times are 10 us with 3 % noise, every
    flow that involves `rank` `factor` times as long at both ends (a suspect
    for `suspects` to name); /links dropped so it is recomputed; /ranks/host
    replaced by `hosts` when given."""
    import h5py
    import numpy as np
    copy(src, dst)
    rng = np.random.default_rng(seed)
    with h5py.File(dst, "r+") as f:
        for g in f["cases"].values():
            t = g["times"][()]
            t = np.where(np.isfinite(t), 1e-5 * (1 + 0.03 * rng.random(t.shape)), np.nan)
            ends = sorted({r for fl in g["flows"][()].tolist() if rank in fl for r in fl})
            t[ends] *= factor
            g["times"][...] = t
        for top in ("links", "link_cells"):
            if top in f:
                del f[top]
        if hosts is not None:
            del f["ranks/host"]
            f["ranks/host"] = [h.encode() for h in hosts]
    return dst


def rounds_run_with_slow_rank(tmp, hosts=None):
    """A real 4-rank latency,bw --pattern rounds run (1K-16K) in tmp/run.h5, and
    tmp/slow.h5: its quiet copy with rank 1 slow (quiet_with_slow_rank)."""
    run = make_run(os.path.join(tmp, "run.h5"), "-t", "latency,bw", "-b", "1K", "-e", "16K", "-f", "4",
                   "-n", "6", "-w", "1", "--window", "4", "--pattern", "rounds", np=4)
    return run, quiet_with_slow_rank(run, os.path.join(tmp, "slow.h5"), rank=1, hosts=hosts)
