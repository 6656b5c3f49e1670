"""gdrbench simulate: the noise model comes from real files (the emulated
cluster's archived validate runs), simulated files are gdrbench files that
suspects reads unchanged, an injected fault is named and a healthy simulated
fleet names nothing, and the fleet judge agrees with the file path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

import numpy as np

from gdrtest import REPO, analysis, gdrbench

ARCHIVE = os.path.join(REPO, "results", "archive", "20261203_cluster_validate-runs.tar.xz")


class SimulateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gdr-simtest-")
        with tarfile.open(ARCHIVE) as t:
            t.extractall(cls.tmp)
        rows = [json.loads(x) for x in open(os.path.join(cls.tmp, "runs", "manifest.jsonl"))]
        rows = [r for r in rows if r.get("h5") and r["hosts"] == 4 and r.get("transport") == "mpi"]
        f = lambda r: os.path.join(cls.tmp, r["h5"])  # noqa: E731
        cls.healthy = [f(r) for r in rows if r["class"] == "healthy"][:3]
        cls.linked = [(f(r), r["target"]) for r in rows if r["class"] == "link"][:2]
        assert len(cls.healthy) == 3 and len(cls.linked) == 2, "the archive lacks 4-host runs"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_sim(self, *args):
        exe = gdrbench()
        if exe:
            return subprocess.run([exe, "simulate", *args], capture_output=True, text=True, timeout=300)
        return analysis("simulate", *args)

    def test_noise_model_is_read_from_real_files(self):
        import h5py
        from gdranalysis.schema import load_run
        from gdranalysis.sim_noise import fit
        m = fit(self.healthy)
        run = load_run(self.healthy[0])
        self.assertEqual(m.bytes, sorted({c.attrs["bytes"] for c in run.cases}))
        self.assertEqual(m.links, 3 * 12 * 3)  # 3 files x 12 links (4 hosts) x 3 sizes
        first = [c for c in run.cases if c.attrs["bytes"] == m.bytes[0]][0]
        self.assertEqual(m.iters[0], first.times.shape[1])
        self.assertGreater(m.size_sd, 1e-4)  # real links differ; a made-up model would not need files
        # Twice as slow files: twice the base time, the same spread (the model follows the files).
        slow = []
        for i, p in enumerate(self.healthy):
            q = os.path.join(self.tmp, f"slow{i}.h5")
            shutil.copyfile(p, q)
            with h5py.File(q, "r+") as h:
                for g in h["cases"].values():
                    g["times"][...] = g["times"][()] * 2.0
            slow.append(q)
        m2 = fit(slow)
        np.testing.assert_allclose(m2.base_s, 2 * np.array(m.base_s), rtol=1e-9)
        self.assertAlmostEqual(m2.size_sd, m.size_sd, places=9)
        # A fault's target is left out: the link runs fit without the slowed link's hosts.
        files = [p for p, _ in self.linked] + self.healthy[:1]
        # 4 hosts less the 2 slowed: one link each way, in 3 sizes; and 12 links of the healthy run
        self.assertEqual(fit(files, dict(self.linked)).links, (2 + 2 + 12) * 3)

    def test_names_an_injected_fault_and_nothing_on_a_healthy_fleet(self):
        specs = self.healthy + [f"{p}:{','.join(t)}" for p, t in self.linked]
        r = self.run_sim("trials", "--noise-from", *specs, "--hosts", "6", "--cells",
                         "healthy,link:25,nic-both:25,rank:50", "--trials", "3", "--seed", "7", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        cells = {c["class"]: c for c in json.loads(r.stdout)}
        self.assertEqual(cells["healthy"]["wrong_hosts"], 0)
        self.assertEqual(cells["healthy"]["hosts_judged"], 18)
        for cls in ("link", "nic-both", "rank"):
            self.assertEqual(cells[cls]["found"], 3, cells[cls])
            self.assertEqual(cells[cls]["wrong_hosts"], 0, cells[cls])

    def test_simulated_file_is_read_by_suspects_unchanged(self):
        from gdranalysis.sim_files import Fault, write_run
        from gdranalysis.sim_noise import fit
        m = fit(self.healthy)
        hosts = [f"h{i}" for i in range(5)]
        for fault, code in ((Fault("healthy"), 0), (Fault("link", 30.0, ("h1", "h3")), 1)):
            p = os.path.join(self.tmp, f"sim-{fault.cls}.h5")
            write_run(p, m, hosts, 1, fault, np.random.default_rng(3))
            r = analysis("suspects", p, "--min-slowdown", "7", "--p0", "0.01", "--json")
            self.assertEqual(r.returncode, code, r.stderr)
            named = {h for s in json.loads(r.stdout)["suspects"] for h in s["host"].split("->")}
            self.assertEqual(named, set() if code == 0 else {"h1", "h3"}, r.stdout)

    def test_fleet_judge_agrees_with_the_file_path(self):
        from gdranalysis.sim_fleet import check_small
        from gdranalysis.sim_noise import fit
        m = fit(self.healthy)
        ja = {"z": 5.0, "min_slowdown_pct": 7.0, "p0": 0.01}
        same, named = check_small(m, 6, 4, np.random.default_rng(5), ja)
        self.assertEqual(same, 4)
        self.assertGreaterEqual(named, 2)  # the link trials: the judges agree on a named fault too

    def test_fleet_sample_of_rounds_finds_bad_hosts(self):
        """--max-rounds: the first rounds only; two NICs slowed both ways are named, a healthy
        fleet is not, and the schedule counts 2N steps a size. 6 of 15 rounds: with 4, a host
        that meets both slow hosts has half of its links slow and is named too (32 of 40 trials)."""
        from gdranalysis import schedule, sim_fleet
        from gdranalysis.sim_noise import fit
        m = fit(self.healthy)
        sched = sim_fleet.scheduled(16, 6)
        self.assertEqual(int(sched.sum()), 2 * 6 * 8)  # 6 rounds of 8 host pairs, both ways
        self.assertIsNone(sim_fleet.scheduled(16, 15))  # every round: all pairs
        rng = np.random.default_rng(11)
        floors = [sim_fleet.iteration_floor(m, rng, k) for k in range(len(m.bytes))]
        ja = {"z": 5.0, "min_slowdown_pct": 7.0, "p0": 0.01, "alpha": 1e-3}
        for _ in range(3):
            found, wrong = sim_fleet.fleet_trial(m, 16, 1, "nic-both", 25.0, rng, floors, ja, bad=2, sched=sched)
            self.assertTrue(found)
            self.assertEqual(wrong, 0)
            self.assertEqual(sim_fleet.fleet_trial(m, 16, 1, "healthy", 0.0, rng, floors, ja, sched=sched), (None, 0))
        # The full matrix judged through the mask equals the unmasked judge.
        T = sim_fleet.draw_plane(m, 8, rng)
        full = np.ones((8, 8), bool)
        self.assertEqual(sim_fleet.judge_matrix(T, floors, **ja), sim_fleet.judge_matrix(T, floors, sched=full, **ja))
        r = self.run_sim("fleet", "--noise-from", *self.healthy, "--hosts", "16", "--gpus", "1", "--cells",
                         "nic-both:25", "--trials", "2", "--max-rounds", "6", "--bad-hosts", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        row = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual((row["found"], row["wrong_hosts"], row["max_rounds"], row["bad"]), (2, 0, 6, 2), row)
        self.assertAlmostEqual(row["schedule_s_host_rounds"],
                               2 * 6 * len(m.bytes) * (0.1 + schedule.CASE_OVERHEAD_S), places=6)

    def test_docs_name_archived_files_that_exist(self):
        import glob
        import re
        with open(os.path.join(REPO, "docs", "fleet-scale.md")) as f:
            names = set(re.findall(r"results/archive/[\w.*\-]+", f.read()))
        self.assertGreaterEqual(len(names), 3)
        for n in names:
            self.assertTrue(glob.glob(os.path.join(REPO, n)), n)

    def test_bad_input_is_one_line_exit_2(self):
        for args in (["trials", "--noise-from", self.healthy[0], "--cells", "bogus:3"],
                     ["trials", "--noise", os.path.join(self.tmp, "none.json")],
                     ["fleet", "--noise-from", self.healthy[0], "--hosts", "2"]):
            r = self.run_sim(*args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
