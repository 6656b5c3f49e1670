"""`gdrbench export --openmetrics` (docs/prometheus.md): the file of a real run
with a slow rank is read by Debian's real prometheus-node-exporter (textfile
collector, loopback port), scraped over HTTP, and passes `promtool check
metrics`; the series stay bounded on a run larger than the bounds."""

import os
import shutil
import socket
import subprocess
import time
import urllib.request

import numpy as np

from gdrtest import REPO, TempDirCase, analysis, gdrbench, mpi_env, rounds_run_with_slow_rank

from gdranalysis import openmetrics
from gdranalysis.api import RunResult, load_run
from gdranalysis.schema import Case, Run
from gdranalysis.suspects import Suspect

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
HOSTS = ["nodeA", "nodeA", "nodeB", "nodeB"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def samples(text):
    """{name: [(labels dict, value)]} of a Prometheus text page."""
    import re
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out


class Export(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.h5, cls.slow = rounds_run_with_slow_rank(cls.tmp, hosts=HOSTS)
        cls.dir = os.path.join(cls.tmp, "textfile")
        os.mkdir(cls.dir)
        cls.prom = os.path.join(cls.dir, "gdrbench.prom")
        # Through the binary, as a job would: gdrbench forwards `export` to the analysis package.
        r = subprocess.run([gdrbench(), "export", "--openmetrics", cls.slow, "-o", cls.prom], env=mpi_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"export failed ({r.returncode}): {r.stderr}")
        with open(cls.prom) as f:
            cls.text = f.read()

    def test_promtool_accepts_it(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing: Debian's prometheus package (jobs/deps)")
        r = subprocess.run([promtool, "check", "metrics"], input=self.text, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout.strip(), "", r.stdout)  # no lint warning either

    def test_node_exporter_serves_the_series(self):
        self.assertTrue(os.access(NODE_EXPORTER, os.X_OK), "prometheus-node-exporter missing (jobs/deps)")
        port = free_port()
        log = open(os.path.join(self.tmp, "node_exporter.log"), "w")
        ne = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                               "--collector.disable-defaults", "--collector.textfile",
                               f"--collector.textfile.directory={self.dir}"], stdout=log, stderr=log)
        try:
            page, deadline = None, time.monotonic() + 20
            while page is None and time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                        page = resp.read().decode()
                except OSError:
                    time.sleep(0.2)
            self.assertIsNotNone(page, "node_exporter did not answer within 20 s")
        finally:
            ne.terminate()
            ne.wait(timeout=10)
            log.close()
        got = samples(page)
        self.assertEqual(got["node_textfile_scrape_error"][0][1], 0.0)
        mine = samples(self.text)
        for name in ("gdrbench_busbw_bytes_per_second", "gdrbench_iteration_seconds", "gdrbench_wrong_elements",
                     "gdrbench_rank_suspect", "gdrbench_host_suspect", "gdrbench_link_suspect_slowdown_ratio"):
            self.assertEqual(len(got.get(name, [])), len(mine.get(name, [])), name)
        # 2 tests x 3 sizes (1K, 4K, 16K) of the rounds pattern: one series each, whatever the pairs.
        self.assertEqual(len(got["gdrbench_busbw_bytes_per_second"]), 6)
        for labels, v in got["gdrbench_busbw_bytes_per_second"]:
            self.assertGreater(v, 0)
            self.assertEqual(labels["transport"], "mpi")
            self.assertTrue(labels["commit"])
        self.assertEqual({l["size"] for l, _ in got["gdrbench_iteration_seconds"]}, {"1024", "4096", "16384"})
        self.assertEqual(sum(v for _, v in got["gdrbench_wrong_elements"]), 0)
        suspect = {l["rank"]: (l["host"], v) for l, v in got["gdrbench_rank_suspect"]}
        self.assertEqual(suspect, {"0": ("nodeA", 0), "1": ("nodeA", 1), "2": ("nodeB", 0), "3": ("nodeB", 0)})
        self.assertEqual({l["host"]: v for l, v in got["gdrbench_host_suspect"]}, {"nodeA": 0, "nodeB": 0})
        for l, v in got.get("gdrbench_link_suspect_slowdown_ratio", []):  # rank 1 at an end of any suspect link
            self.assertIn("1", (l["src"], l["dst"]), l)
            self.assertGreater(v, 1.25)

    def test_same_as_the_python_command_and_stdout(self):
        r = analysis("export", "--openmetrics", self.slow)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.text)

    def test_bad_input_is_one_line_and_2(self):
        for args in (["--openmetrics", "/nonexistent.h5"], [self.slow],
                     ["--openmetrics", self.slow, "-o", "/nonexistent-dir/x.prom"]):
            r = analysis("export", *args)
            self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class ArchivedGpuRun(TempDirCase):
    """An archived H200 run (UCX, CUDA memory, direct and staged, with ceilings) exports
    %peak and direct/staged, and promtool accepts it."""

    def test_peak_and_direct_over_staged(self):
        path = os.path.join(REPO, "results/archive/20261201T075334_vm_2r_h200-path-mps.h5")
        text = openmetrics.render(load_run(path))
        m = samples(text)
        self.assertTrue(any(l["transport"] == "ucx" and l["reference"] == "0" for l, _ in m["gdrbench_peak_percent"]))
        ratios = {(l["test"], l["size"]): v for l, v in m["gdrbench_direct_over_staged_ratio"] if l["transport"] == "ucx"}
        self.assertIn(("bw", "4194304"), ratios)
        self.assertTrue(all(v > 0 for v in ratios.values()))
        self.assertEqual({l["pattern"] for l, _ in m["gdrbench_busbw_bytes_per_second"]}, {"pair"})
        r = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, ""))


class Bounds(TempDirCase):
    """More ranks, hosts and suspect links than the bounds: the series stop at them."""

    def test_large_run_is_bounded(self):
        n, hosts = 9000, [f"node{r // 8:04d}" for r in range(9000)]  # 1125 hosts
        rng = np.random.default_rng(1)
        cases = []
        for i, size in enumerate((1024, 1 << 20)):
            a = {"test": "allreduce", "transport": "mpi", "reference": 0, "mem": "host", "path": "direct",
                 "dtype": "float", "op": "sum", "bytes": size, "ranks": n, "src": -1, "dst": -1, "wrong": 0,
                 "busbw_gbps": 1.0, "time_us_mean": 10.0}
            cases.append(Case(name=f"{i:05d}", attrs=a, times=1e-5 * (1 + 0.01 * rng.random((n, 5)))))
        run = Run(path="synthetic.h5", attrs={"schema_version": 2, "status": "complete", "ranks": n,
                                              "git_commit": "abc"}, hosts=hosts, local_ranks=[],
                  facts={}, environment={}, cases=cases, warnings=[])
        m = samples(openmetrics.render(RunResult(run)))
        self.assertEqual(len(m["gdrbench_rank_info"]), openmetrics.MAX_RANK_SERIES)
        self.assertEqual(len(m["gdrbench_busbw_bytes_per_second"]), 2)
        dropped = {l["kind"]: v for l, v in m["gdrbench_export_series_dropped"]}
        self.assertEqual(dropped["rank"], n - openmetrics.MAX_RANK_SERIES)
        self.assertEqual(m["gdrbench_suspects_judged"][0][1], 0)  # no p2p case: no suspect series
        self.assertNotIn("gdrbench_rank_suspect", m)
        w, dropped = openmetrics._Writer("abc"), {}
        openmetrics._host_series(w, run, {"node1100"}, dropped)
        bad = [Suspect("link", f"{r}>{r + 1}", "", 3, 3, 1.5 + r / 1e4, 9.0, ["rounds"], "", 1e-6, ["link"])
               for r in range(1200)]
        openmetrics._link_series(w, run, bad, dropped)
        m = samples(w.text())
        self.assertEqual(len(m["gdrbench_host_suspect"]), openmetrics.MAX_HOST_SERIES)
        self.assertIn(({"host": "node1100", "commit": "abc"}, 1.0), m["gdrbench_host_suspect"])
        links = m["gdrbench_link_suspect_slowdown_ratio"]
        self.assertEqual(len(links), openmetrics.MAX_LINK_SERIES)
        self.assertEqual(links[0][0]["src"], "1199")  # the slowest first
        self.assertEqual(dropped, {"host": 1125 - 1024, "link": 200})
