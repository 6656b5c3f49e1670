"""The README's first command, `./jobs/setup.sh`, as written: it finds every
package present, builds (nothing to do after the build that runs ctest), and
runs the main job, here cut to one small case through its extra arguments.
Its table still has the header lines the README's first run reads."""
import os
import re
import subprocess
import tempfile
import unittest

from docs_model import REPO, blocks


BUILD = os.environ.get("GDR_BUILD_DIR", os.path.join(REPO, "build"))


class FirstCommand(unittest.TestCase):
    def test_setup_runs_the_main_job(self):
        if os.path.realpath(BUILD) != os.path.realpath(os.path.join(REPO, "build")):
            raise unittest.SkipTest(f"setup.sh builds into build/, not this build folder {BUILD}")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "first.h5")
            p = subprocess.run([os.path.join(REPO, "jobs", "setup.sh"), "-t", "latency", "-T", "mpi", "-b", "8",
                                "-e", "8", "-n", "5", "-w", "1", "--output", out], cwd=d, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            self.assertEqual(p.returncode, 0, p.stdout[-3000:])
            self.assertTrue(os.path.isfile(out))
        self.assertIn("install-deps: all", p.stdout)
        self.assertIn("# complete run (2 ranks)", p.stdout)
        shown = [b for b in blocks("README.md") if b.kind == "fence" and b.lang == "text"][0].lines
        for line in shown:
            if line.startswith(("# time:", "#     size(B)")):
                self.assertIn(line, p.stdout.split("\n"), "the README's first run no longer matches the output")
        self.assertTrue(re.search(r"latency:0>1\s+mpi host\s+direct", p.stdout))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    # 77: ctest's SKIP_RETURN_CODE, so a skip shows as skipped, not passed.
    raise SystemExit(77 if result.skipped else (0 if result.wasSuccessful() else 1))
