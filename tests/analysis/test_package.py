"""gdranalysis as a pip package (results/gdranalysis/pyproject.toml, docs/python-api.md):
pip installs it into a fresh virtual environment, and its API, used from
outside the source tree on a real run, agrees with `gdrbench compare` and
`gdrbench suspects` (the CLI) on the same files."""

import json
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

from gdrtest import PYTHON, REPO, RESULTS, TempDirCase, analysis, rounds_run_with_slow_rank

# Runs inside the venv, from a folder outside the repository, without PYTHONPATH.
PROBE = r"""
import json, sys
import gdranalysis
from gdranalysis import load_run
run_path, slow_path = sys.argv[1:3]
r = load_run(run_path)
s = load_run(slow_path)
cmp = r.compare(slow_path, n_resamples=999)
print(json.dumps({
    "file": gdranalysis.__file__, "version": gdranalysis.__version__,
    "ncases": len(r.cases), "columns": list(r.cases.columns),
    "busbw": r.cases["busbw_gbps"].tolist(), "wrong": int(r.cases["wrong"].sum()),
    "iter_rows": len(r.iterations), "iter_sum": float(r.iterations["time_s"].sum()),
    "links": len(r.links()), "complete": r.complete,
    "verdicts": {c.base_case: c.verdict for c in cmp.cases},
    "ratios": {c.base_case: c.ratio for c in cmp.cases},
    "suspects": [x.what for x in s.suspects().suspects],
}))
"""


def cmake_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(gdrbench VERSION ([0-9.]+)", f.read()).group(1)


class PipPackage(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.h5, cls.slow = rounds_run_with_slow_rank(cls.tmp)
        # pip builds in place: install from a copy so the source tree stays clean.
        src = shutil.copytree(os.path.join(RESULTS, "gdranalysis"), os.path.join(cls.tmp, "src"),
                              ignore=shutil.ignore_patterns("__pycache__"))
        cls.venv = os.path.join(cls.tmp, "venv")
        subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", cls.venv], check=True, timeout=120)
        cls.vpy = os.path.join(cls.venv, "bin", "python")
        # --no-deps: h5py, numpy, pandas, scipy and matplotlib are Debian's (jobs/deps/debian-analysis.txt).
        r = subprocess.run([cls.vpy, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", src],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError(f"pip install failed:\n{r.stdout[-3000:]}")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        p = subprocess.run([cls.vpy, "-c", PROBE, cls.h5, cls.slow], cwd=cls.tmp, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 0:
            raise AssertionError(f"API probe failed:\n{p.stderr[-3000:]}")
        cls.api = json.loads(p.stdout)

    def test_installed_copy_is_used_and_version_is_gdrbench(self):
        self.assertIn(os.path.join(self.venv, "lib"), self.api["file"])
        self.assertEqual(self.api["version"], cmake_version())
        r = subprocess.run([os.path.join(self.venv, "bin", "gdranalysis"), "--analysis-version"],
                           stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.stdout.strip(), f"gdranalysis {cmake_version()}")

    def test_cases_and_iterations_match_the_file(self):
        with h5py.File(self.h5) as f:
            names = sorted(f["cases"])
            total = sum(float(np.nansum(f[f"cases/{n}/times"][()])) for n in names)
            cells = sum(int(np.isfinite(f[f"cases/{n}/times"][()]).sum()) for n in names)
            wrong = sum(int(f[f"cases/{n}"].attrs["wrong"]) for n in names)
        self.assertEqual(self.api["ncases"], len(names))
        self.assertEqual(self.api["iter_rows"], cells)
        self.assertAlmostEqual(self.api["iter_sum"], total, places=9)
        self.assertEqual(self.api["wrong"], wrong)
        self.assertTrue(self.api["complete"])
        for col in ("test", "transport", "mem", "path", "bytes", "median_us", "busbw_gbps", "pct_peak", "wrong"):
            self.assertIn(col, self.api["columns"])
        self.assertTrue(all(b > 0 for b in self.api["busbw"]), self.api["busbw"])
        self.assertGreater(self.api["links"], 0)

    def test_compare_agrees_with_cli(self):
        r = analysis("compare", self.h5, self.slow, "--json", "--resamples", "999")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        cli = json.loads(r.stdout)
        self.assertEqual({c["base_case"]: c["verdict"] for c in cli["cases"]}, self.api["verdicts"])
        for c in cli["cases"]:
            self.assertAlmostEqual(c["ratio"], self.api["ratios"][c["base_case"]], places=12)

    def test_suspects_agree_with_cli(self):
        r = analysis("suspects", self.slow, "--json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        cli = [s["what"] for s in json.loads(r.stdout)["suspects"]]
        self.assertIn("rank 1", cli)
        self.assertEqual(cli, self.api["suspects"])


    def test_docs_example_runs_and_its_numbers_hold(self):
        with open(os.path.join(REPO, "docs", "python-api.md")) as f:
            doc = f.read()
        block = re.search(r"^```python\n(.*?)^```", doc, re.M | re.S).group(1)
        ns = {}
        cwd = os.getcwd()
        os.chdir(REPO)  # the example names archived files relative to the checkout
        try:
            exec(compile(block, "docs/python-api.md", "exec"), ns)
        finally:
            os.chdir(cwd)
        m = re.search(r"`run.cases` has (\d+) rows and `run.iterations` ([\d,]+) rows", doc)
        self.assertEqual(len(ns["run"].cases), int(m.group(1)))
        self.assertEqual(len(ns["run"].iterations), int(m.group(2).replace(",", "")))
        self.assertEqual(len(ns["cmp"].cases), len(ns["base"].cases))


if __name__ == "__main__":
    import unittest
    unittest.main()
