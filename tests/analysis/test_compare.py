"""`compare` on real runs: same configuration twice, scaled copies, bad input."""

import json
import os
import sys

import numpy as np

from gdrtest import PYTHON, TempDirCase, analysis, copy, make_run, scale_case, set_root_attr

from gdranalysis.compare import compare_runs, ratio_ci
from gdranalysis.schema import load_run

# Small but real: every test, sizes 8 B .. 256 KiB.
RUN_ARGS = ["-t", "allreduce,latency,bw", "-e", "256K", "-n", "20"]


def _pick_quiet(run, test, exclude=()):
    """The case of `test` whose iterations spread least (IQR / median)."""
    best = None
    for c in run.cases:
        if c.attrs["test"] != test or c.name in exclude or c.attrs["reference"]:
            continue
        s = c.slowest()
        spread = np.subtract(*np.percentile(s, [75, 25])) / np.median(s)
        if best is None or spread < best[0]:
            best = (spread, c.name)
    return best[1]


class CompareRealRuns(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = make_run(os.path.join(cls.tmp, "a.h5"), *RUN_ARGS)
        cls.b = make_run(os.path.join(cls.tmp, "b.h5"), *RUN_ARGS)

    def test_same_configuration_is_mostly_same(self):
        r = analysis("compare", self.a, self.b, "--json")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        doc = json.loads(r.stdout)
        n = doc["summary"]["compared"]
        same = doc["summary"]["same"]
        self.assertGreater(n, 30)
        self.assertEqual(doc["only_base"], [])
        self.assertEqual(doc["only_new"], [])
        print(f"\n  same configuration twice: {n - same}/{n} cases not 'same' "
              f"(run-to-run noise sd {doc['run_noise_sd_pct']:.1f}%)", file=sys.stderr)
        # How many cases two real runs agree on depends on what else loads the
        # machine meanwhile (28/64 differed once on a busy CI host):
        # printed, not asserted. What compare promises under such load is
        # asserted with load of a known size (test_calm_under_synthetic_load)
        # and measured over more runs in test_false_positive_rate.

    def test_calm_under_synthetic_load(self):
        # The second run is the first with the run-to-run noise of a loaded
        # shared machine put in, seeded: every case shifted by its own factor
        # (lognormal, sd 12%) and whole blocks of 8 consecutive cases by a
        # common one (sd 12%), the shape seen between CI runs. Nothing really
        # changed, so compare must call nearly every case 'same'; a case
        # really 1.5x slower must still stand out.
        import h5py
        rng = np.random.default_rng(16)
        new = copy(self.a, self.p("loaded.h5"))
        with h5py.File(new, "r") as f:
            names = sorted(f["cases"])
        block = {}
        for i, name in enumerate(names):
            b = block.setdefault(i // 8, rng.lognormal(0, 0.12))
            scale_case(new, name, b * rng.lognormal(0, 0.12))
        r = analysis("compare", self.a, new, "--json")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        doc = json.loads(r.stdout)
        n, same = doc["summary"]["compared"], doc["summary"]["same"]
        print(f"\n  synthetic load: {n - same}/{n} cases not 'same' "
              f"(estimated run-to-run noise sd {doc['run_noise_sd_pct']:.1f}%)", file=sys.stderr)
        self.assertGreater(doc["run_noise_sd_pct"], 5.0)
        self.assertGreaterEqual(same / n, 0.9)
        quiet = names[len(names) // 2]
        scale_case(new, quiet, 3.0)
        doc = json.loads(analysis("compare", self.a, new, "--json").stdout)
        verdict = {c["base_case"]: c["verdict"] for c in doc["cases"]}
        self.assertEqual(verdict[quiet], "regression")

    def test_scaled_copy_flags_exactly_those_cases(self):
        run = load_run(self.a)
        up = _pick_quiet(run, "allreduce")
        down = _pick_quiet(run, "bw")
        big = _pick_quiet(run, "latency")
        new = copy(self.a, self.p("scaled.h5"))
        scale_case(new, up, 1.2)
        scale_case(new, down, 0.8)
        scale_case(new, big, 1.5)
        r = analysis("compare", self.a, new, "--json")
        self.assertEqual(r.returncode, 1, r.stderr)
        doc = json.loads(r.stdout)
        verdicts = {c["base_case"]: c["verdict"] for c in doc["cases"]}
        self.assertEqual({k for k, v in verdicts.items() if v == "regression"}, {up, big})
        self.assertEqual({k for k, v in verdicts.items() if v == "improvement"}, {down})
        self.assertEqual(doc["summary"]["same"], len(verdicts) - 3)
        ratios = {c["base_case"]: c["ratio"] for c in doc["cases"]}
        self.assertAlmostEqual(ratios[up], 1.2, places=6)
        self.assertAlmostEqual(ratios[down], 0.8, places=6)
        self.assertAlmostEqual(ratios[big], 1.5, places=6)
        # The table says the same, with the regressions in capitals.
        t = analysis("compare", self.a, new)
        self.assertEqual(t.returncode, 1)
        self.assertEqual(t.stdout.count("REGRESSION"), 2)
        self.assertIn("2 regression, 1 improvement", t.stdout)
        # Only an improvement: exit 0.
        better = copy(self.a, self.p("better.h5"))
        scale_case(better, down, 0.8)
        self.assertEqual(analysis("compare", self.a, better).returncode, 0)

    def test_copy_of_itself_is_same_everywhere(self):
        r = analysis("compare", self.a, copy(self.a, self.p("same.h5")), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["summary"]["same"], doc["summary"]["compared"])
        for c in doc["cases"]:
            self.assertAlmostEqual(c["ratio"], 1.0)
            self.assertLessEqual(c["ci_low"], 1.0)
            self.assertGreaterEqual(c["ci_high"], 1.0)

    def test_threshold_decides(self):
        run = load_run(self.a)
        case = _pick_quiet(run, "allreduce")
        new = copy(self.a, self.p("t.h5"))
        scale_case(new, case, 1.2)
        self.assertEqual(analysis("compare", self.a, new, "--threshold", "5").returncode, 1)
        self.assertEqual(analysis("compare", self.a, new, "--threshold", "30").returncode, 0)

    def test_cases_in_one_file_only_are_listed(self):
        import h5py
        new = copy(self.a, self.p("fewer.h5"))
        with h5py.File(new, "r+") as f:
            names = sorted(f["cases"])
            del f["cases"][names[0]]
            f["cases"][names[1]].attrs["bytes"] = 3           # a size no run has
        r = analysis("compare", self.a, new, "--json")
        doc = json.loads(r.stdout)
        self.assertEqual(sorted(d["case"] for d in doc["only_base"]), names[:2])
        self.assertEqual([d["bytes"] for d in doc["only_new"]], [3])
        t = analysis("compare", self.a, new)
        self.assertIn("# only in base (2)", t.stdout)
        self.assertIn("# only in new (1)", t.stdout)

    def test_deterministic(self):
        r1 = analysis("compare", self.a, self.b, "--json")
        r2 = analysis("compare", self.a, self.b, "--json")
        self.assertEqual(r1.stdout, r2.stdout)
        # ...and independent of the order cases are compared in.
        a, b = load_run(self.a), load_run(self.b)
        full = {c.base_case: (c.ci_low, c.ci_high) for c in compare_runs(a, b, run_noise="off").cases}
        b.cases.reverse()
        a.cases = a.cases[::2]
        part = {c.base_case: (c.ci_low, c.ci_high) for c in compare_runs(a, b, run_noise="off").cases}
        for k, v in part.items():
            self.assertEqual(full[k], v)

    def test_interval_comes_from_scipy_bootstrap(self):
        from scipy import stats
        rng = np.random.default_rng(1)
        base = rng.lognormal(0, 0.05, 40)
        new = base * 1.3
        ratio, lo, hi = ratio_ci(base, new, seed=[7])
        ref = stats.bootstrap((base, new), lambda x, y, axis=-1: np.median(y, axis) / np.median(x, axis),
                              vectorized=True, method="percentile", n_resamples=9999,
                              random_state=np.random.default_rng([7]))
        self.assertAlmostEqual(lo, ref.confidence_interval.low)
        self.assertAlmostEqual(hi, ref.confidence_interval.high)
        self.assertTrue(lo < 1.3 < hi)

    def test_run_noise_widens_intervals(self):
        a, b = load_run(self.a), load_run(self.b)
        off = compare_runs(a, b, run_noise="off")
        fixed = compare_runs(a, b, run_noise="10")
        self.assertEqual(fixed.run_noise_sd, 0.10)
        for x, y in zip(off.cases, fixed.cases):
            self.assertLessEqual(y.ci_low, x.ci_low + 1e-12)
            self.assertGreaterEqual(y.ci_high, x.ci_high - 1e-12)
            self.assertEqual((x.boot_low, x.boot_high), (y.boot_low, y.boot_high))

    # Several real runs of one configuration, each compared with the next:
    # every case not 'same' is a false positive. The rate is printed; the
    # bound asserted is loose because the machines here are shared (see
    # results/README.md for the rates measured and what drives them). The
    # first two runs are this class's a and b (two fewer runs to make).
    RUNS = 5

    def test_false_positive_rate(self):
        from measure_false_positives import measure
        files = [self.a, self.b] + [make_run(self.p(f"r{i}.h5"), *RUN_ARGS) for i in range(2, self.RUNS)]
        m = measure(files, threshold=5.0)
        off = measure(files, threshold=5.0, run_noise="off")
        noise = ", ".join(f"{100 * p[4]:.1f}%" for p in m["pairs"])
        print(f"\n  false positives at the default threshold: {m['flagged']}/{m['total']} = "
              f"{100 * m['rate']:.1f}% over {self.RUNS - 1} pairs of consecutive runs "
              f"(run-to-run noise sd {noise}); with --run-noise off: {100 * off['rate']:.1f}%",
              file=sys.stderr)
        for k, v in m["by_case"].most_common(5):
            print(f"    {v} x {k}", file=sys.stderr)
        self.assertLessEqual(m["flagged"], off["flagged"])
        # Loose on purpose: this bound catches a broken statistic, not a noisy
        # machine. Quiet: a few percent; this 2-core machine under load: 7-12%;
        # one CI run on a shared host: 26.6% (noise sd 7-15%, heavy-tailed),
        # where the bootstrap alone flagged 71%. See results/README.md.
        self.assertLessEqual(m["rate"], 0.40)


class CompareBadInput(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.good = make_run(os.path.join(cls.tmp, "good.h5"), "-t", "allreduce", "-e", "4K", "-n", "5")

    def assertBad(self, base, new, words):
        r = analysis("compare", base, new)
        self.assertEqual(r.returncode, 2, f"stdout={r.stdout}\nstderr={r.stderr}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("gdrbench compare: error: "), lines[0])
        for w in words:
            self.assertIn(w, lines[0])
        self.assertEqual(r.stdout, "")

    def test_missing_file(self):
        self.assertBad(self.good, self.p("nope.h5"), ["nope.h5", "no such file"])
        self.assertBad(self.p("nope.h5"), self.good, ["nope.h5", "no such file"])

    def test_not_hdf5(self):
        with open(self.p("text.h5"), "w") as f:
            f.write("time_us,bytes\n1.0,8\n")
        self.assertBad(self.good, self.p("text.h5"), ["not an HDF5 file"])

    def test_truncated(self):
        with open(self.good, "rb") as f:
            data = f.read()
        with open(self.p("trunc.h5"), "wb") as f:
            f.write(data[: len(data) // 2])
        self.assertBad(self.good, self.p("trunc.h5"), ["trunc.h5", "truncated or corrupt"])

    def test_locked_while_written(self):
        # A file another process holds open for writing (a run still going) is
        # locked by HDF5, not damaged: the line says so and how to read it anyway.
        import subprocess
        locked = copy(self.good, self.p("locked.h5"))
        holder = subprocess.Popen([PYTHON, "-c", "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); "
                                   "print('open', flush=True); sys.stdin.read()", locked],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "open")
            self.assertBad(self.good, locked, ["locked.h5", "locked", "HDF5_USE_FILE_LOCKING=FALSE"])
            r = analysis("compare", self.good, locked, env_extra={"HDF5_USE_FILE_LOCKING": "FALSE"})
            self.assertIn(r.returncode, (0, 1), r.stderr)
        finally:
            holder.stdin.close()
            holder.wait(30)
        self.assertIn(analysis("compare", self.good, locked).returncode, (0, 1))

    def test_newer_schema(self):
        set_root_attr(copy(self.good, self.p("v99.h5")), "schema_version", np.int64(99))
        self.assertBad(self.good, self.p("v99.h5"), ["schema_version 99 is newer"])

    def test_wrong_schema(self):
        set_root_attr(copy(self.good, self.p("v0.h5")), "schema_version", np.int64(0))
        self.assertBad(self.good, self.p("v0.h5"), ["schema_version 0"])
        set_root_attr(copy(self.good, self.p("vs.h5")), "schema_version", "one")
        self.assertBad(self.p("vs.h5"), self.good, ["schema_version", "not an integer"])

    def test_hdf5_of_another_program(self):
        import h5py
        with h5py.File(self.p("other.h5"), "w") as f:
            f.attrs["creator"] = "someone else"
            f["data"] = np.arange(10.0)
        self.assertBad(self.good, self.p("other.h5"), ["not a gdrbench result file"])
        with h5py.File(self.p("other2.h5"), "w") as f:     # has the attribute, not the layout
            f.attrs["schema_version"] = 1
            f["data"] = np.arange(10.0)
        self.assertBad(self.good, self.p("other2.h5"), ["no /cases group"])

    def test_no_common_cases(self):
        other = make_run(self.p("bibw.h5"), "-t", "bibw", "-e", "1K", "-n", "3")
        self.assertBad(self.good, other, ["no common cases"])

    def test_directory(self):
        self.assertBad(self.good, self.tmp, ["directory"])

    def test_usage(self):
        r = analysis("compare", self.good)
        self.assertEqual(r.returncode, 2)
        r = analysis("compare", self.good, self.good, "--threshold", "-3")
        self.assertEqual(r.returncode, 2)
