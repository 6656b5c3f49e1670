"""`report` on a fleet's file: read as a summary (each rank's median), link matrices per host
pair, the per-rank heat map one column a host. A simulated host-rounds file of 65 hosts x 8
ranks (520 ranks, above report's 512 per-rank columns) with one host's NIC 30 % slower both
ways; and a real 4-rank run, whose host-pair medians from a summary read equal those of the
whole read's per-link matrix."""

import os
import re

import numpy as np

from gdrtest import REPO, TempDirCase, analysis, make_run

from gdranalysis import links, plots
from gdranalysis.schema import load_run
from gdranalysis.sim_files import Fault, write_host_rounds_run
from gdranalysis.sim_noise import NoiseModel

NOISE = os.path.join(REPO, "results", "archive", "20261204_sim-vs-cluster-quiet-noise-16h-mpi.json")
HOSTS = [f"f{i:02d}" for i in range(65)]
SLOW = "f07"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class ReportScale(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fleet = os.path.join(cls.tmp, "fleet.h5")
        write_host_rounds_run(cls.fleet, NoiseModel.from_json(NOISE), HOSTS, 8, Fault("nic-both", 30.0, (SLOW,)),
                              np.random.default_rng(5), max_rounds=6)
        cls.small = make_run(os.path.join(cls.tmp, "small.h5"), "-t", "bw", "-b", "4K", "-e", "8K", "-n", "5",
                             "--pattern", "rounds", np=4)

    def test_fleet_page_reads_medians_and_draws_host_pairs(self):
        out = self.p("fleet.html")
        r = analysis("report", self.fleet, "--html", out, "--read", "summary")
        self.assertEqual(r.returncode, 0, r.stderr)
        page = read(out)
        self.assertIn("Read as a summary", page)
        self.assertIn("Link matrix (per host pair)", page)
        ids = set(re.findall(r'<img id="([^"]+)"', page))
        self.assertIn("fig-heatmap-bw", ids)
        self.assertTrue(any(i.startswith("fig-links-bw_") for i in ids), ids)
        self.assertIn("fig-busbw", ids)
        # Every case row has a time: the slowest rank's median, not "-" for want of iterations.
        rows = re.findall(r"<tr><td>\d{5}</td>(.*?)</tr>", page)
        self.assertEqual(len(rows), 2 * 6 * 3)  # 6 rounds x 2 directions x 3 sizes
        medians = [re.findall(r'<td class="num">([^<]*)</td>', row)[2] for row in rows]
        self.assertTrue(all(m not in ("-", "nan", "") for m in medians), medians[:5])

    def test_slow_host_is_the_slow_row_and_column(self):
        run = load_run(self.fleet, summary=True)
        (table, names), = links.host_pair_tables(run)
        self.assertEqual(table.ranks, len(HOSTS))
        self.assertEqual(names, sorted(HOSTS))
        bw = table.algbw_gbps[-1]
        s = names.index(SLOW)
        measured = np.isfinite(bw)
        self.assertEqual(int(measured.sum()), 6 * 32 * 2)  # 6 rounds x 32 host pairs (one host rests) x 2 ways
        others = bw[measured & (np.arange(len(names))[:, None] != s) & (np.arange(len(names))[None, :] != s)]
        mine = np.concatenate([bw[s][np.isfinite(bw[s])], bw[:, s][np.isfinite(bw[:, s])]])
        self.assertGreater(mine.size, 0)
        self.assertLess(np.max(mine), np.min(others))  # 30 % slower both ways: below every healthy pair
        self.assertTrue(np.all(np.isfinite([plots.median_us(c) for c in run.cases])))

    def test_host_pair_medians_match_the_whole_read(self):
        hosts = ["h0", "h1", "h2", "h3"]
        whole, summary = load_run(self.small), load_run(self.small, summary=True)
        whole.hosts, summary.hosts = list(hosts), list(hosts)
        full = {t.name: t for t in links.link_tables(whole)}
        for t, names in links.host_pair_tables(summary):
            agg, agg_names = full[t.name].host_aggregate(hosts, "time_us")
            self.assertEqual(names, agg_names)
            np.testing.assert_allclose(t.time_us, agg, rtol=1e-9, equal_nan=True)

    def test_auto_reads_small_files_whole_and_baseline_needs_iterations(self):
        out = self.p("small.html")
        r = analysis("report", self.small, "--html", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Read as a summary", read(out))
        r = analysis("report", self.fleet, "--html", out, "--read", "summary", "--baseline", self.small)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("--read full", r.stderr)
        r = analysis("report", self.fleet, "--html", out, "--read", "some")
        self.assertEqual(r.returncode, 2, r.stderr)


if __name__ == "__main__":
    import unittest
    unittest.main()
