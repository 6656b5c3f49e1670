"""`suspects`, the link matrix and its heat map on a real 4-rank run with
the rounds and incast patterns (the real slow-rank runs are tests/mpi's
test_suspects.py; its false-positive rate: measure_false_positives.py suspects)."""

import json
import os
import unittest

import h5py
import numpy as np

from gdrtest import TempDirCase, analysis, copy, make_run

from gdranalysis.links import link_tables, tables_from_cases
from gdranalysis.report import build_html
from gdranalysis.schema import load_run

SLOW = 1


class Suspects(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.run4 = make_run(os.path.join(cls.tmp, "np4.h5"), "-t", "latency,bw", "-b", "1K", "-e", "64K",
                            "-f", "8", "-n", "6", "-w", "1", "--window", "8", "--pattern", "rounds,incast", np=4)
        cls.noise = copy(cls.run4, os.path.join(cls.tmp, "noise.h5"))
        with h5py.File(cls.noise, "r+") as f:
            # Every rank's times the same up to 3 % noise: a run with nothing to find.
            rng = np.random.default_rng(1)
            for g in f["cases"].values():
                t = g["times"][()]
                g["times"][...] = np.where(np.isfinite(t), 1e-5 * (1 + 0.03 * rng.random(t.shape)), np.nan)
            del f["link_cells"]
        cls.slow = copy(cls.noise, os.path.join(cls.tmp, "slow.h5"))
        with h5py.File(cls.slow, "r+") as f:
            # Every flow that involves rank SLOW takes 4x as long, as both its ends see it.
            for g in f["cases"].values():
                ends = {r for fl in g["flows"][()].tolist() if SLOW in fl for r in fl}
                t = g["times"][()]
                t[sorted(ends)] *= 4
                g["times"][...] = t
            for k in ("ranks/host",):
                del f[k]
            f["ranks/host"] = [b"nodeA", b"nodeA", b"nodeB", b"nodeB"]

    def test_links_written_equal_recomputed(self):
        run = load_run(self.run4)
        self.assertEqual(sorted(run.links), ["bw_mpi_host_direct_rounds", "latency_mpi_host_direct_rounds"])
        for t in tables_from_cases(run):
            np.testing.assert_allclose(run.links[t.name]["time_us"], t.time_us, rtol=1e-12)
            off = ~np.eye(4, dtype=bool)
            self.assertTrue(np.isfinite(t.time_us[:, off]).all(), t.name)

    def test_no_suspect_in_noise(self):
        r = analysis("suspects", self.noise, "--json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(json.loads(r.stdout)["suspects"], [])

    def test_slow_rank_named_alone(self):
        r = analysis("suspects", self.slow, "--json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual({s["what"] for s in rep["suspects"] if s["kind"] == "rank"}, {f"rank {SLOW}"})
        for s in rep["suspects"]:
            if s["kind"] == "link":
                self.assertIn(SLOW, [int(x) for x in s["what"].split(">")])
        self.assertEqual(rep["hosts"], [])  # nodeA has a healthy rank too
        txt = analysis("suspects", self.slow).stdout
        self.assertIn(f"rank {SLOW}", txt)

    def slowed(self, name, hosts, slow, factor=3):
        """A copy of the noisy run on `hosts`, each flow (a, b) with slow(a, b) `factor` x slower at both ends."""
        d = copy(self.noise, self.p(name))
        with h5py.File(d, "r+") as f:
            for g in f["cases"].values():
                ends = {r for a, b in g["flows"][()].tolist() if slow(a, b) for r in (a, b)}
                t = g["times"][()]
                t[sorted(ends)] *= factor
                g["times"][...] = t
            del f["ranks/host"]
            f["ranks/host"] = hosts
        return d

    def test_slow_direction_between_two_hosts_names_the_host_link(self):
        # Every flow from nodeB (ranks 2, 3) to nodeA (0, 1) 3x slower, as both its ends see it:
        # node B's sending side or node A's receiving side, which two hosts cannot tell apart.
        d = self.slowed("dir.h5", [b"nodeA", b"nodeA", b"nodeB", b"nodeB"], lambda a, b: a >= 2 > b)
        r = analysis("suspects", d, "--json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual([(s["kind"], s["what"]) for s in rep["suspects"]], [("hostlink", "nodeB>nodeA")])
        self.assertEqual(sorted(rep["suspects"][0]["links"]), ["2>0", "2>1", "3>0", "3>1"])
        self.assertEqual(rep["hosts"], [])
        self.assertIn("nodeB's sending side or nodeA's receiving side", analysis("suspects", d).stdout)

    def test_slow_sender_host_among_three_is_named(self):
        # Three hosts: nodeC (rank 3) sends 3x slower to both others: a third host tells which end.
        d = self.slowed("three.h5", [b"nodeA", b"nodeA", b"nodeB", b"nodeC"], lambda a, b: a == 3)
        r = analysis("suspects", d, "--json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual(rep["hosts"], ["nodeC"])
        self.assertEqual({s["what"] for s in rep["suspects"] if s["kind"] == "hostlink"},
                         {"nodeC>nodeA", "nodeC>nodeB"})
        for s in rep["suspects"]:  # anything else named involves rank 3
            ends = {int(x) for x in s["what"].replace("rank ", "").split(">")} if s["kind"] != "hostlink" else {3}
            self.assertIn(3, ends, s)

    def test_one_rank_per_host_slow_sender_is_named(self):
        # gdrbench validate's shape: one rank a host, so each host link is one link. Host h4 sends
        # 25 % slower to every other: its sending side, named as a sender and as the host (the
        # host-link step once took each link's own time out and left the senders nothing).
        d = self.slowed("one.h5", [b"h1", b"h2", b"h3", b"h4"], lambda a, b: a == 3, factor=1.25)
        rep = json.loads(analysis("suspects", d, "--json", "--min-slowdown", "7").stdout)
        self.assertEqual(rep["hosts"], ["h4"], rep["suspects"])
        self.assertIn("sender", {a for s in rep["suspects"] if s["what"] == "rank 3" for a in s["as_"]})

    def test_bad_input(self):
        for args in (["/nonexistent.h5"], [self.noise, "--z", "nan"], [self.noise, "--p0", "2"]):
            r = analysis("suspects", *args)
            self.assertEqual(r.returncode, 2, f"{args}: {r.stdout} {r.stderr}")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        allreduce = make_run(self.p("ar.h5"), "-t", "allreduce", "-e", "1K", "-n", "3", np=2)
        r = analysis("suspects", allreduce)
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_report_draws_the_link_matrix(self):
        page, images = build_html(load_run(self.noise))  # no /links: recomputed
        self.assertIn("fig-links-bw_mpi_host_direct_rounds-1024", images)
        self.assertIn("fig-links-latency_mpi_host_direct_rounds-65536", images)
        self.assertEqual(len(link_tables(load_run(self.run4))), 2)


class RankDevices(TempDirCase):
    """/ranks/gpu and /ranks/hca read back (the Soft-RoCE two-node cases check rxe0:1 on a verbs run)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.jsonl = os.path.join(cls.tmp, "p.jsonl")
        cls.h5 = make_run(os.path.join(cls.tmp, "p.h5"), "-t", "bw", "-b", "8", "-e", "8", "-n", "3", "-w", "1",
                          "--pattern", "rounds,incast", "--json", cls.jsonl, np=4)

    def test_host_memory_mpi_run_has_no_gpu_nor_hca(self):
        with h5py.File(self.h5, "r") as f:
            self.assertEqual(f["ranks/gpu"].shape, (4,))
            self.assertEqual(f["ranks/hca"].shape, (4,))
        run = load_run(self.h5)
        self.assertEqual(run.gpus, [""] * 4)
        self.assertEqual(run.hcas, [""] * 4)  # the mpi transport does not say which device MPI used
        self.assertEqual(run.device_of(0), "")

    def test_older_file_without_them_reads(self):
        old = copy(self.h5, self.p("old.h5"))
        with h5py.File(old, "r+") as f:
            del f["ranks/gpu"], f["ranks/hca"]
        run = load_run(old)
        self.assertEqual((run.gpus, run.hcas, run.device_of(1)), ([], [], ""))
        page, _ = build_html(run)
        self.assertIn(f"0 {run.hosts[0]}; 1 {run.hosts[1]}", page)

    def test_report_axes_name_gpu_and_hca(self):
        dev = copy(self.h5, self.p("dev.h5"))
        with h5py.File(dev, "r+") as f:
            del f["ranks/gpu"], f["ranks/hca"]
            f["ranks/gpu"] = [b"0000:3B:00.0 NVIDIA H200", b"", b"0000:3B:00.0 NVIDIA H200", b""]
            f["ranks/hca"] = [b"mlx5_0:1", b"mlx5_1:1", b"", b""]
        run = load_run(dev)
        page, _ = build_html(run)
        h = run.hosts
        self.assertIn(f"0 {h[0]} 0000:3B:00.0 NVIDIA H200/mlx5_0:1; 1 {h[1]} mlx5_1:1; "
                      f"2 {h[2]} 0000:3B:00.0 NVIDIA H200; 3 {h[3]}", page)

    def test_json_pattern_rows_say_pattern_step_flows(self):
        with open(self.jsonl) as f:
            rows = [json.loads(line) for line in f]
        rows = [r for r in rows if "record" not in r]  # live_suspect, retest_verdict records: not cases
        run = load_run(self.h5)
        self.assertEqual(len(rows), len(run.cases))
        for row, case in zip(rows, run.cases):
            self.assertNotIn("src", row)
            self.assertNotIn("dst", row)
            self.assertEqual((row["pattern"], row["step"]), (case.attrs["pattern"], case.attrs["step"]))
            self.assertEqual(row["flows"], [list(map(int, fl)) for fl in case.flows])


class LeaveOneOut(unittest.TestCase):
    """The O(n log n) leave-one-out median and robust sd that judge each link, rank or host link
    against the others: exactly (bit for bit) the brute force, with ties and NaNs."""

    def test_equals_the_brute_force(self):
        from gdranalysis.robust import loo_robust as _loo_robust, robust as _robust
        rng = np.random.default_rng(7)
        for _ in range(1500):
            n = int(rng.integers(1, 14))
            v = rng.normal(size=n)
            if rng.random() < 0.3:
                v[rng.integers(0, n)] = np.nan
            if rng.random() < 0.4:
                v = np.round(v)  # ties
            med, sd = _loo_robust(v)
            for i in range(n):
                want = _robust(np.delete(v, i))
                np.testing.assert_array_equal([med[i], sd[i]], want, err_msg=f"{v}, leaving out {i}")


class ArrayStatistics(unittest.TestCase):
    """The statistics `suspects` judges a fleet's millions of links with, as arrays: exactly the
    plain numpy expression each replaces, with NaN, inf, zeros and ties."""

    def test_equal_the_plain_expressions(self):
        from gdranalysis import robust
        rng = np.random.default_rng(11)
        for _ in range(400):
            r, c = int(rng.integers(1, 7)), int(rng.integers(0, 9))
            x = rng.lognormal(size=(r, c))
            u = rng.random((r, c))
            x[u < 0.2], x[(u > 0.2) & (u < 0.25)], x[(u > 0.25) & (u < 0.28)] = np.nan, 0.0, np.inf
            if rng.random() < 0.3:
                x = np.round(x, 1)  # ties
            med, se = robust.row_medians(x), robust.median_se_rows(x)
            for i, row in enumerate(x):
                kept = row[~np.isnan(row)]
                np.testing.assert_array_equal(med[i], np.median(kept) if kept.size else np.nan, err_msg=f"{row}")
                np.testing.assert_array_equal(se[i], robust.median_se(row), err_msg=f"{row}")
            keys = rng.integers(0, 4, x.size)
            for k, m in zip(*robust.group_medians(keys, x.ravel())):
                v = x.ravel()[keys == k]
                v = v[~np.isnan(v)]
                np.testing.assert_array_equal(m, np.median(v) if v.size else np.nan, err_msg=f"{v}")


class HostAggregate(unittest.TestCase):
    """The per-host-pair medians of the link plots (links.LinkTable.host_aggregate), one sort a
    size instead of a scan of every rank for every host pair: exactly the median of each
    block's finite links, as the plain loop has it, with NaN, inf, ties and hosts of unequal
    rank counts in any order."""

    def test_equals_the_loop_over_host_pairs(self):
        from gdranalysis.links import LinkTable
        rng = np.random.default_rng(5)
        for _ in range(60):
            n, sizes = int(rng.integers(2, 12)), int(rng.integers(1, 4))
            hosts = [f"h{int(rng.integers(0, 4))}" for _ in range(n)]
            m = rng.lognormal(size=(sizes, n, n))
            u = rng.random(m.shape)
            m[u < 0.3], m[(u > 0.3) & (u < 0.33)] = np.nan, np.inf
            if rng.random() < 0.4:
                m = np.round(m, 1)
            t = LinkTable("x", "bw", "mpi", "host", "direct", "rounds", "bandwidth", n, np.arange(sizes), m, m)
            got, names = t.host_aggregate(hosts)
            self.assertEqual(names, sorted(set(hosts)))
            for s_ in range(sizes):
                for i, a in enumerate(names):
                    for j, b in enumerate(names):
                        ra = [r for r in range(n) if hosts[r] == a]
                        rb = [r for r in range(n) if hosts[r] == b]
                        v = m[s_][np.ix_(ra, rb)].ravel()
                        v = v[np.isfinite(v)]
                        np.testing.assert_array_equal(got[s_, i, j], np.median(v) if v.size else np.nan)


class SummaryRead(TempDirCase):
    """`suspects` and `validate` read each case's rank medians only (load_run(summary=True)):
    the same report as a full read, on real runs and on a simulated host-rounds file of the
    schema a real one has, and no iteration or link matrix held."""

    def _same(self, path, **kw):
        from gdranalysis.suspects import analyze
        full, summ = load_run(path), load_run(path, summary=True)
        self.assertEqual(summ.links, {})
        self.assertTrue(all(c.times.shape == (c.times.shape[0], 0) for c in summ.cases))
        a, b = analyze(full, **kw).as_dict(), analyze(summ, **kw).as_dict()
        self.assertEqual(json.dumps(a, sort_keys=True, default=str), json.dumps(b, sort_keys=True, default=str))
        return b

    def test_real_runs_judged_alike(self):
        run4 = make_run(os.path.join(self.tmp, "np4.h5"), "-t", "bw", "-b", "1K", "-e", "4K", "-n", "6",
                        "--window", "8", "--pattern", "rounds,incast", np=4)
        self.assertGreater(self._same(run4)["judged"], 0)
        self._same(run4, z=5.0, min_slowdown_pct=7.0, p0=0.01)

    def test_simulated_host_rounds_fleet_file(self):
        from gdranalysis import schedule
        from gdranalysis.sim_files import Fault, write_host_rounds_run
        from gdranalysis.sim_noise import NoiseModel
        model = NoiseModel.from_json(os.path.join(os.path.dirname(__file__), "..", "..", "results", "archive",
                                                  "20261204_sim-vs-cluster-quiet-noise-16h-mpi.json"))
        hosts = [f"h{i}" for i in range(7)]
        for fault, rounds in ((Fault("nic-egress", 25, ("h3",)), 0), (Fault("healthy"), 4)):
            p = os.path.join(self.tmp, f"hr-{fault.cls}.h5")
            write_host_rounds_run(p, model, hosts, 4, fault, np.random.default_rng(5), max_rounds=rounds)
            run = load_run(p, summary=True)
            rec = schedule.recorded(run)
            self.assertEqual(schedule.host_rounds_problems(run, rec), [])  # flows as gdrbench schedules them
            self.assertEqual(len(run.cases), len(model.bytes) * schedule.steps("host-rounds", 28, 7, max_rounds=rounds))
            rep = self._same(p, z=5.0, min_slowdown_pct=7.0, p0=0.01)
            self.assertEqual(rep["hosts"], ["h3"] if fault.cls != "healthy" else [])
