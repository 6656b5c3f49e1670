"""`gdrbench compare|stragglers|report|history` hand their arguments to the
Python package and return its status (needs the lead's wiring in main.cpp)."""

import os
import subprocess
import unittest

from gdrtest import TempDirCase, copy, gdrbench, make_run, scale_past_spread

from gdranalysis.schema import load_run


def _wired(exe):
    r = subprocess.run([exe, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return "compare" in r.stdout and "history" in r.stdout


class Binary(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.exe = gdrbench()
        if cls.exe is None:
            raise unittest.SkipTest("no gdrbench binary")
        if not _wired(cls.exe):
            raise unittest.SkipTest("gdrbench has no analysis subcommands yet (add_analysis_commands)")
        cls.a = make_run(os.path.join(cls.tmp, "a.h5"), "-t", "allreduce", "-e", "16K", "-n", "10")

    def run_bin(self, *args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run([self.exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=e, timeout=300)

    def test_exit_status_passes_through(self):
        same = copy(self.a, self.p("same.h5"))
        self.assertEqual(self.run_bin("compare", self.a, same).returncode, 0)
        slow = copy(self.a, self.p("slow.h5"))
        # Past its own spread (CI, 2026-12-06: 1.5x of a loaded host's 10 iterations read "same").
        scale_past_spread(slow, load_run(self.a).cases[10].name)
        # Options before, between and after the positionals all reach Python.
        r = self.run_bin("compare", "--threshold", "5", self.a, "--json", slow, "--seed", "3")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn('"seed": 3', r.stdout)
        r = self.run_bin("compare", self.a, self.p("missing.h5"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("gdrbench compare: error:", r.stderr)

    def test_help_and_other_subcommands(self):
        r = self.run_bin("compare", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--threshold PCT", r.stdout)
        self.assertEqual(self.run_bin("stragglers", self.a, "--all").returncode, 0)
        self.assertEqual(self.run_bin("history", self.a, "--case", "test=allreduce,bytes=8").returncode, 0)
        out = self.p("r.html")
        self.assertEqual(self.run_bin("report", self.a, "--html", out).returncode, 0)
        self.assertTrue(os.path.getsize(out) > 10000)

    def test_validate_forwarded(self):
        # validate is an analysis subcommand too (its runs: tests/cluster, tests/slurm).
        r = self.run_bin("validate", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--budget SECONDS", r.stdout)
        for args, why in ((["--hostfile", self.p("none.txt")], "cannot read"),
                          (["--slurm"], "SLURM_JOB_NODELIST"), ([], "one of the arguments")):
            r = self.run_bin("validate", *args, env={"SLURM_JOB_NODELIST": ""})
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(why, r.stderr)

    def test_interpreter_override(self):
        # A path that is not an executable is bad input, as a bad option is: one clear line, exit 2.
        r = self.run_bin("compare", self.a, self.a, env={"GDR_PYTHON": "/nonexistent/python3"})
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("GDR_PYTHON", r.stderr)
        # A name looked up in PATH that is not there: the launch fails (127).
        r = self.run_bin("compare", self.a, self.a, env={"GDR_PYTHON": "no-such-python3"})
        self.assertEqual(r.returncode, 127)
        self.assertIn("GDR_PYTHON", r.stderr)
