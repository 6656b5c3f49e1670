"""gdrbench baseline on real archived runs of the emulated cluster (4 hosts,
bw --pattern rounds, 20 Mbit/s links): a series of healthy runs reports
nothing; the same past followed by two real runs with the gm3<->gm4 link
paced 5 % slower (jobs/cluster/fault.sh: time x 1.05) reports exactly those
two links, about 4.8 % below their past, since the first slowed run; bad
input is one line and exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from gdrtest import REPO, analysis, gdrbench

ARCHIVE = os.path.join(REPO, "results", "archive", "20261203_cluster_validate-runs.tar.xz")
PAST = 3  # --min-runs: each file read costs about a second on 2 busy cores


class BaselineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gdr-baseline-")
        with tarfile.open(ARCHIVE) as t:
            rows = [json.loads(x) for x in t.extractfile("runs/manifest.jsonl")]
            rows = [r for r in rows if r.get("h5") and r["hosts"] == 4 and r["transport"] == "mpi"]
            healthy = [r for r in rows if r["class"] == "healthy"][:PAST + 2]
            # the last two, so that PAST healthy runs came before them (runs are judged in time order)
            slow = [r for r in rows if r["class"] == "link" and r["severity"] == 5.0
                    and sorted(r["target"]) == ["gm3", "gm4"]][-2:]
            assert len(healthy) == PAST + 2 and len(slow) == 2, "the archive lacks its 4-host runs"
            assert healthy[PAST - 1]["utc"] < slow[0]["utc"]
            for r in healthy + slow:
                t.extract(r["h5"], cls.tmp)
        f = lambda r: os.path.join(cls.tmp, r["h5"])  # noqa: E731
        cls.healthy, cls.slow = [f(r) for r in healthy], [f(r) for r in slow]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def baseline(self, *args):
        exe = gdrbench()
        if exe:
            return subprocess.run([exe, "baseline", "--min-runs", str(PAST), *args],
                                  capture_output=True, text=True, timeout=300)
        return analysis("baseline", "--min-runs", str(PAST), *args)

    def test_healthy_series_reports_nothing(self):
        r = self.baseline(*self.healthy)
        self.assertEqual(r.returncode, 0, r.stderr)
        # 12 links, 4 hosts x (sender, receiver)
        self.assertIn(f"# {PAST + 2} runs, 2026-12-03T08:", r.stdout)
        self.assertIn("20 links, GPUs and hosts judged", r.stdout)
        self.assertIn("# no change", r.stdout)

    def test_link_five_percent_slower_is_reported(self):
        # given newest first: the command orders runs by their start_utc
        r = self.baseline("--json", *reversed(self.healthy[:PAST] + self.slow))
        self.assertEqual(r.returncode, 1, r.stderr)
        rep = json.loads(r.stdout)
        got = {(c["kind"], c["what"]) for c in rep["changes"]}
        self.assertEqual(got, {("link", "gm3/r0>gm4/r0"), ("link", "gm4/r0>gm3/r0")})
        for c in rep["changes"]:
            self.assertTrue(3.0 < c["pct_below"] < 7.0, c)  # paced 5 % slower: 4.8 % less bandwidth
            self.assertEqual(c["since_file"], os.path.basename(self.slow[0]))
            self.assertEqual(c["runs_changed"], 2)

    def test_bad_input_is_one_line_exit_2(self):
        bad = os.path.join(self.tmp, "truncated.h5")
        with open(self.healthy[0], "rb") as src, open(bad, "wb") as dst:
            dst.write(src.read(4096))
        for args in ([bad], self.healthy[:1]):  # unreadable; too little history
            r = self.baseline(*args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("gdrbench baseline: error:", r.stderr)
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
