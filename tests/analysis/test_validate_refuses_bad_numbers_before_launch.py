"""validate refuses every bad number of its command line with one line and
exit 2 before it launches anything: no launcher started (an `mpirun` first on
PATH records every start), no --out folder, no commands.log, and at once. The
same run with good numbers does launch, so the spy is seen to work."""

from __future__ import annotations

import os
import stat
import time
import unittest

from gdrtest import TempDirCase, analysis
from numbers_cli import bad_values, flag_rows, main

MORE = {  # beyond the table's own: values named in the reports, and zero where it means nothing
    "--budget": ["1e12", "0", "-5"], "--ranks-per-host": ["1000000000", "0"], "--window": ["0", "1e6"],
    "--timeout": ["0"], "--p0": ["0", "1"], "--z": ["0"], "--min-slowdown": ["0", "1001"],
    "--min-bytes": ["0", "64Q"], "--max-bytes": ["9G"],
}


class ValidateRefusesBadNumbersBeforeLaunch(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bin, cls.marker = os.path.join(cls.tmp, "bin"), os.path.join(cls.tmp, "launched")
        os.mkdir(cls.bin)
        for name in ("mpirun", "srun"):
            spy = os.path.join(cls.bin, name)
            with open(spy, "w") as f:
                f.write(f"#!/bin/sh\necho \"$0 $*\" >> {cls.marker}\nexit 1\n")
            os.chmod(spy, stat.S_IRWXU)
        cls.hosts = os.path.join(cls.tmp, "hosts")
        with open(cls.hosts, "w") as f:
            f.write("node1\nnode2\n")
        cls.env = {"PATH": cls.bin + ":" + os.environ["PATH"]}

    def argv(self, out, *extra):
        return ["validate", "--hostfile", self.hosts, "--gdrbench", "/bin/true", "--out", out, "--no-report",
                *extra]

    def test_every_numeric_flag(self):
        flags = 0
        for _, head, flag, b in flag_rows():
            if head[0] != "validate":
                continue
            flags += 1
            for v in bad_values(b) + MORE.get(flag, []):
                out = self.p(f"out{flag}{len(v)}")
                t0 = time.monotonic()
                code, err = main(*self.argv(out, f"{flag}={v}"), env=self.env)
                took = time.monotonic() - t0
                what = f"{flag}={v}"
                self.assertEqual((code, len(err.strip().splitlines())), (2, 1), f"{what}: {err}")
                self.assertIn(b.text(), err, what)
                self.assertFalse(os.path.exists(self.marker), f"{what}: a launcher was started")
                self.assertFalse(os.path.exists(out), f"{what}: {out} was made")
                self.assertLess(took, 2.0, what)
        self.assertGreaterEqual(flags, 12)

    def test_too_many_ranks_in_all(self):
        """Each number in range, their product not: hosts x ranks per host."""
        many = self.p("many")
        with open(many, "w") as f:
            f.write("".join(f"node{i}\n" for i in range(300)))
        code, err = main("validate", "--hostfile", many, "--ranks-per-host", "256", "--out", self.p("o"), env=self.env)
        self.assertEqual(code, 2, err)
        self.assertIn("76800", err)
        self.assertFalse(os.path.exists(self.marker))

    def test_good_numbers_launch(self):
        """The control, through the real command: good numbers reach the launcher."""
        out = self.p("good")
        r = analysis(*self.argv(out, "--budget", "60"), env_extra=self.env, timeout=120)
        self.assertTrue(os.path.exists(self.marker), r.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "commands.log")))
        os.remove(self.marker)
        r = analysis(*self.argv(self.p("bad"), "--budget", "nan"), env_extra=self.env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertFalse(os.path.exists(self.marker))


if __name__ == "__main__":
    unittest.main()
