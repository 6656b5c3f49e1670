"""Unit tests of the reader's helpers (no runs needed)."""

import os
import shutil
import tempfile
import unittest

import numpy as np

import gdrtest  # noqa: F401  (sets sys.path)
from gdranalysis.compare import verdict, widen
from gdranalysis.schema import (Case, InputError, format_bytes, parse_bytes, parse_case_spec)


def _case(**kw):
    a = dict(test="allreduce", transport="mpi", reference=0, mem="host", path="direct", dtype="float",
             op="sum", bytes=1024, ranks=2, src=-1, dst=-1)
    a.update(kw)
    return Case(name="00000", attrs=a, times=np.array([[1.0, 2.0, np.nan], [3.0, 1.0, np.nan]]))


class Helpers(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(parse_bytes("1M"), 1 << 20)
        self.assertEqual(parse_bytes("64k"), 65536)
        self.assertEqual(parse_bytes("8"), 8)
        self.assertRaises(ValueError, parse_bytes, "1.5M")
        self.assertEqual(format_bytes(1 << 30), "1G")
        self.assertEqual(format_bytes(1536), "1536")

    def test_case_spec(self):
        self.assertEqual(parse_case_spec("test=allreduce, bytes=1M,reference=true,src=0"),
                         {"test": "allreduce", "bytes": 1 << 20, "reference": 1, "src": 0})
        self.assertEqual(parse_case_spec("size=4K"), {"bytes": 4096})
        for bad in ("colour=red", "test", "bytes=big", "ranks=two", "reference=maybe"):
            self.assertRaises(InputError, parse_case_spec, bad)

    def test_slowest_and_rank_medians(self):
        c = _case()
        np.testing.assert_array_equal(c.slowest(), [3.0, 2.0])     # the all-NaN iteration dropped
        np.testing.assert_array_equal(c.rank_medians(), [1.5, 2.0])
        self.assertEqual(c.label(), "allreduce mpi host direct float sum 1K")
        self.assertEqual(_case(test="bw", dtype="byte", op="none", src=0, dst=1).label(),
                         "bw0>1 mpi host direct 1K")

    def test_verdict(self):
        self.assertEqual(verdict(1.06, 1.2, 5), "regression")
        self.assertEqual(verdict(1.04, 1.2, 5), "same")
        self.assertEqual(verdict(0.8, 0.94, 5), "improvement")
        self.assertEqual(verdict(0.8, 0.96, 5), "same")
        self.assertEqual(verdict(float("nan"), 1, 5), "n/a")

    def test_widen(self):
        lo, hi = widen(1.0, 0.99, 1.01, 0.0, 1.96)
        self.assertEqual((lo, hi), (0.99, 1.01))
        lo, hi = widen(1.0, 0.99, 1.01, 0.05, 1.96)
        self.assertLess(lo, 0.92)
        self.assertGreater(hi, 1.08)
        self.assertAlmostEqual(np.log(hi), np.hypot(np.log(1.01), 1.96 * 0.05))


class ExitStatus(unittest.TestCase):
    def test_crash_is_not_a_regression(self):
        import contextlib
        import io
        from gdranalysis import cli

        def boom(a):
            raise RuntimeError("simulated bug")
        saved = cli.cmd_compare
        cli.cmd_compare = boom
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                rc = cli.main(["compare", "a.h5", "b.h5"])
        finally:
            cli.cmd_compare = saved
        self.assertEqual(rc, 3)
        self.assertIn("internal error", err.getvalue())


class DamagedFiles(unittest.TestCase):
    """Edits of a small real result file (tests/fuzz/corpus) that once gave a
    traceback or a huge allocation; each must be one InputError line."""

    SEED = os.path.join(gdrtest.REPO, "tests", "fuzz", "corpus", "hdf5_reader", "run_allreduce_np2.h5")

    def _edited(self, edit):
        import h5py
        d = tempfile.mkdtemp(prefix="gdr-schema-")
        p = os.path.join(d, "r.h5")
        shutil.copy(self.SEED, p)
        with h5py.File(p, "r+") as f:
            edit(f)
        return p

    def test_seed_loads(self):
        from gdranalysis.schema import load_run
        r = load_run(self.SEED)
        self.assertEqual(r.nranks, 2)
        self.assertEqual(len(r.cases), 2)

    def test_damage_is_input_error(self):
        from gdranalysis.schema import load_run

        def times(shape):
            def edit(f):
                del f["cases/00000/times"]
                f.create_dataset("cases/00000/times", shape=shape, dtype="f8")  # never written
            return edit

        def attr(where, k, v):
            return lambda f: f[where].attrs.__setitem__(k, v)

        for why, edit in [
            ("inf bytes", attr("cases/00000", "bytes", float("inf"))),
            ("huge ranks", attr("/", "ranks", 2**62)),
            ("huge times", times((2, 1 << 31))),
            ("3-d times", times((2, 2, 2))),
            ("times is a group", lambda f: (f.__delitem__("cases/00000/times"), f.create_group("cases/00000/times"))),
        ]:
            with self.subTest(why):
                p = self._edited(edit)
                with self.assertRaises(InputError) as cm:
                    load_run(p)
                self.assertNotIn("\n", str(cm.exception))

    def test_missing_ranks_attribute_counts_hosts(self):
        from gdranalysis.schema import load_run
        p = self._edited(lambda f: f.attrs.__delitem__("ranks"))
        self.assertEqual(load_run(p).nranks, 2)


class ReaderKilled(unittest.TestCase):
    """A reader the kernel kills (SIGKILL: what the out-of-memory killer sends; a 1,024 x 8 file of
    every host pair took 24 GB to read whole) is said to be that, with the sizes, not a corrupt
    file: a real read of a simulated fleet file, its reading process killed as it starts."""

    def test_killed_reader_is_not_called_a_corrupt_file(self):
        import multiprocessing
        import signal
        import threading
        import time
        from gdranalysis.schema import HDF5LibraryError, load_run
        from gdranalysis.sim_files import Fault, write_host_rounds_run
        from gdranalysis.sim_noise import NoiseModel
        model = NoiseModel.from_json(os.path.join(os.path.dirname(__file__), "..", "..", "results", "archive",
                                                  "20261204_sim-vs-cluster-quiet-noise-16h-mpi.json"))
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "fleet.h5")
        write_host_rounds_run(path, model, [f"h{i:02d}" for i in range(24)], 8, Fault("healthy"),
                              np.random.default_rng(1))
        killed = []

        def kill_the_reader():
            deadline = time.monotonic() + 30
            while not killed and time.monotonic() < deadline:
                for child in multiprocessing.active_children():
                    os.kill(child.pid, signal.SIGKILL)
                    killed.append(child.pid)
                time.sleep(0.001)

        t = threading.Thread(target=kill_the_reader)
        t.start()
        with self.assertRaises(HDF5LibraryError) as cm:
            load_run(path)
        t.join()
        msg = str(cm.exception)
        self.assertIn("the reader was killed (signal 9), most likely out of memory", msg)
        self.assertIn("GB on a machine of", msg)
        self.assertNotIn("corrupt", msg)
