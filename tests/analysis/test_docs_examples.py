"""results/README.md's code examples run as written against real files, and
the analysis reads schema version 1 and 2 files alike.

The Python example is run on a 3-rank file whose first case is point to
point (ranks outside the pair store NaN: `times.max(axis=0)` would give NaN
there); the `gdrbench compare`/`history` blocks run with their placeholder
names replaced by real files."""

import json
import math
import os
import re
import subprocess

import gdrtest  # noqa: F401  (sets sys.path)
from gdrtest import REPO, TempDirCase, analysis, copy, gdrbench, make_run

README = os.path.join(REPO, "results", "README.md")
ARCHIVE_2R = "results/archive/20261129T150800_vm_2r_host-sweep.h5"


def code_blocks(lang):
    """The fenced blocks of results/README.md tagged `lang` ('' = untagged)."""
    with open(README) as f:
        text = f.read()
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
            if m.group(1) == lang]


class ReadmeExamples(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # bibw first: case 00000 is a p2p case, with NaN rows.
        cls.p2p = make_run(os.path.join(cls.tmp, "p2p.h5"), "-t", "bibw,latency,allreduce,bw",
                           "--pairs", "ring", "-e", "4K", "-f", "8", "-n", "5", np=3)
        # Common cases with the 2-rank archive file the compare example names.
        cls.new = make_run(os.path.join(cls.tmp, "new.h5"), "-t", "allreduce,latency,bw",
                           "-e", "1K", "-n", "5", np=2)

    def test_python_example(self):
        blocks = code_blocks("python")
        self.assertTrue(blocks, "results/README.md has no python example")
        for code in blocks:
            self.assertIn("results/....h5", code)
            r = subprocess.run([gdrtest.PYTHON, "-c", code.replace("results/....h5", self.p2p)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            # It prints: recomputed median, stored median, recomputed p99, stored p99.
            med, med_attr, p99, p99_attr = (float(v) for v in r.stdout.split())
            for v in (med, med_attr, p99, p99_attr):
                self.assertTrue(math.isfinite(v) and v > 0, r.stdout)
            self.assertTrue(math.isclose(med, med_attr, rel_tol=1e-9), r.stdout)
            self.assertTrue(math.isclose(p99, p99_attr, rel_tol=1e-9), r.stdout)

    def test_shell_examples(self):
        exe = gdrbench()
        lines = [ln for b in code_blocks("") for ln in b.splitlines() if ln.startswith("gdrbench ")]
        self.assertGreaterEqual(len(lines), 5, lines)
        subst = [("results/new.h5", self.new), ("BASE.h5", ARCHIVE_2R), ("NEW.h5", self.new),
                 ("> cmp.json", f"> {self.p('cmp.json')}"), ("/tmp/trend.png", self.p("trend.png"))]
        for line in lines:
            cmd = line
            for a, b in subst:
                cmd = cmd.replace(a, b)
            cmd = exe + cmd[len("gdrbench"):]
            r = subprocess.run(["bash", "-c", cmd], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=600)
            # 1 is a verdict (a regression found), 4 the gate's verdict on an
            # untrusted input (the archive keeps failed runs): not failures of the example.
            self.assertIn(r.returncode, (0, 1, 4), f"{line}\n-> {cmd}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
            self.assertNotIn("Traceback", r.stderr, line)
        with open(self.p("cmp.json")) as f:
            self.assertIn("cases", json.load(f))
        self.assertTrue(os.path.getsize(self.p("trend.png")) > 0)


class SchemaVersions(TempDirCase):
    """A version 1 file (a real run edited back to what version 1 wrote:
    placeholders everywhere, no p99, busbw = algbw at one rank) reads as
    the version 2 file it came from."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.v2 = make_run(os.path.join(cls.tmp, "v2.h5"), "-t", "allreduce,latency,bw",
                          "-e", "1K", "-f", "4", "-n", "5", "--window", "8", np=2)
        cls.v1 = copy(cls.v2, os.path.join(cls.tmp, "v1.h5"))
        import h5py
        import numpy as np
        with h5py.File(cls.v1, "r+") as f:
            f.attrs["schema_version"] = np.int64(1)
            for g in f["cases"].values():
                g.attrs.setdefault("window", np.int64(64))
                g.attrs.setdefault("chunk_bytes", np.int64(0))
                del g.attrs["time_us_p99"]

    def test_v1_reads_as_v2(self):
        from gdranalysis.schema import load_run
        one, two = load_run(self.v1), load_run(self.v2)
        self.assertEqual((one.schema_version, two.schema_version), (1, 2))
        for a, b in zip(one.cases, two.cases):
            drop = {"time_us_p99"}
            self.assertEqual({k: v for k, v in a.attrs.items() if k not in drop},
                             {k: v for k, v in b.attrs.items() if k not in drop}, a.label())
            self.assertEqual("window" in b.attrs, b.attrs["test"] == "bw", b.label())
            self.assertEqual("chunk_bytes" in b.attrs,
                             b.attrs["test"] == "allreduce" and not b.attrs["reference"], b.label())

    def test_compare_and_history_across_versions(self):
        r = analysis("compare", self.v1, self.v2, "--json")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        notes = json.loads(r.stdout)["notes"]
        self.assertFalse([n for n in notes if "differ" in n], notes)
        r = analysis("history", self.v1, self.v2, "--case", "test=bw,window=8,bytes=512", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count('"file"'), 2, r.stdout)
        r = analysis("history", self.v1, self.v2, "--case", "test=latency,window=64")
        self.assertEqual(r.returncode, 2, "latency has no window: nothing may match")
