"""validate's comparisons beside the timings (results/gdranalysis/validate_config.py) on what
the real `gdrbench doctor` reads from recorded sysfs trees (tests/doctor/data/nic_counters):
a host configured unlike its peers is named with class configuration, a value nobody could
read is never drift, and the counters that moved between a before and an after tree are
named. Also validate's own hostfile: a host given twice, or no slot, is refused with one line
and exit 2 before anything is launched. The live counterpart: tests/cluster/test_config_drift.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gdrtest import PYTHON, REPO, RESULTS, gdrbench
from gdranalysis.schema import InputError
from gdranalysis.validate import read_hostfile
from gdranalysis.validate_config import drift, lossy, moved, read_doctor

TREES = os.path.join(REPO, "tests", "doctor", "data", "nic_counters")


def doctor(sys_root, *extra):
    """The report the real doctor writes for a recorded tree (no library probed; its procfs
    beside its sysfs, where the tree has one)."""
    proc = os.path.join(os.path.dirname(sys_root), "proc")
    procfs = ["--procfs-root", proc] if os.path.isdir(proc) else ["--procfs-root", os.path.join(sys_root, "no-proc")]
    p = subprocess.run([gdrbench(), "doctor", "--json", "--no-libraries", "--sysfs-root", sys_root, *procfs, *extra],
                       capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)["reports"][0]


@unittest.skipIf(gdrbench() is None, "no gdrbench binary")
class Drift(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def host_tree(self, name, edits):
        """A copy of the recorded node with some files rewritten (None: removed, unreadable)."""
        root = os.path.join(self.tmp, name)
        shutil.copytree(os.path.join(TREES, "before", "sys"), root, symlinks=True)
        for rel, text in edits.items():
            os.remove(os.path.join(root, rel))
            if text is not None:
                with open(os.path.join(root, rel), "w") as f:
                    f.write(text + "\n")
        return root

    def test_the_host_unlike_its_peers_is_named_once_with_every_value(self):
        edits = {"n2": {"class/net/eth0/mtu": "1000"},
                 "n3": {"class/infiniband/mlx5_0/fw_ver": "28.35.1000",
                        "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/current_link_width": "4"},
                 "n4": {"class/infiniband/mlx5_0/fw_ver": None}}   # unreadable: unknown, not drift
        reports = {h: doctor(self.host_tree(h, edits.get(h, {}))) for h in ("n1", "n2", "n3", "n4", "n5")}
        self.assertEqual(reports["n4"]["config"]["ib/mlx5_0/fw_ver"], "unknown")
        found = {f.what: (f.kind, f.evidence) for f in drift(reports, list(reports))}
        self.assertEqual(found, {
            "n2": ("configuration", "eth0 MTU 1000, its 4 peers 1400"),
            "n3": ("configuration", "mlx5_0 firmware 28.35.1000, its 3 peers 28.39.1002; "
                                    "mlx5_0 PCIe width 4, its 4 peers 8")})

    def test_unknown_two_hosts_and_no_majority_name_nobody(self):
        def host(**gpu):
            return {"config": {f"gpu/0/{k}": v for k, v in gpu.items()}}
        # GPU values (NVML): none can be read on this machine, so the comparison is fed by hand.
        self.assertEqual([f.what for f in drift({"a": host(ecc="on"), "b": host(ecc="on"), "c": host(ecc="off"),
                                                 "d": host(ecc="unknown")}, "abcd")], ["c"])
        self.assertEqual(drift({"a": host(ecc="on"), "b": host(ecc="off")}, "ab"), [])
        self.assertEqual(drift({"a": host(ecc="on"), "b": host(ecc="off"), "c": host(ecc="on", persistence="x"),
                                "d": host(ecc="off")}, "abcd"), [])   # 2 against 2; persistence on 1 host
        self.assertEqual(drift({h: host(ecc="unknown") for h in "abc"}, "abc"), [])

    def test_counters_that_moved_over_the_run(self):
        before = {"n1": doctor(os.path.join(TREES, "before", "sys"), "--counters")}
        after = {"n1": doctor(os.path.join(TREES, "after", "sys"), "--counters")}
        self.assertEqual(before["n1"]["config"], {})
        said = moved(before, after, ["n1"])["n1"]
        for part in ("eth0 rx_dropped +5", "eth0 carrier_changes +2 (1 down, 1 up; time down not counted)",
                     "mlx5_0 port 1 link_downed +1", "mlx5_0 port 1 symbol_error +12",
                     "mlx5_0 port 1 link_error_recovery +1"):
            self.assertIn(part, said)
        self.assertNotIn("carrier_up_count", said)
        self.assertNotIn("Segs", said)   # TCP's counts are judged against the peers (LossByCounts), not as moved
        self.assertEqual(moved(before, before, ["n1"]), {})
        self.assertEqual(read_doctor(os.path.join(self.tmp, "none.json")), {})
        # Hosts that call themselves otherwise than the allocation: named by launch order.
        path = os.path.join(self.tmp, "d.json")
        with open(path, "w") as f:
            json.dump({"reports": [dict(before["n1"], host="a.example"), dict(before["n1"], host="b.example")]}, f)
        self.assertEqual(list(read_doctor(path, ["a", "b"])), ["a", "b"])
        self.assertEqual(list(read_doctor(path, ["a", "b", "c"])), ["a.example", "b.example"])


@unittest.skipIf(gdrbench() is None, "no gdrbench binary")
class LossByCounts(unittest.TestCase):
    """The host whose TCP resends or out-of-order arrivals are beyond its peers' is named with its
    side; a share at the peers' level, a few segments, or a host the timings named are not."""

    def reports(self, shares, sent=20000):
        """{host: (before, after)} doctor reports: the recorded node, its TCP counts moved by
        `sent` segments each way and the host's (resent, out of order) counts."""
        base = doctor(os.path.join(TREES, "before", "sys"), "--counters")
        before, after = {}, {}
        for h, (resent, ooo) in shares.items():
            before[h] = base
            c = dict(base["counters"])
            for k, d in (("tcp/OutSegs", sent), ("tcp/InSegs", sent), ("tcp/RetransSegs", resent),
                         ("tcp/TCPOFOQueue", ooo)):
                c[k] += d
            after[h] = dict(base, counters=c)
        return before, after

    def test_one_side_each(self):
        shares = {f"n{i}": (3 + i % 3, 1 + i % 2) for i in range(1, 9)}
        shares["n3"] = (260, 2)     # 1.3 % of its segments resent: it loses what it sends
        shares["n6"] = (4, 120)     # 0.6 % arrived out of order: it loses what it receives
        before, after = self.reports(shares)
        found = {f.what: f for f in lossy(before, after, list(shares))}
        self.assertEqual(set(found), {"n3", "n6"})
        self.assertEqual((found["n3"].side, found["n3"].cls), ("send side", "lossy (TCP counts)"))
        self.assertEqual(found["n6"].side, "receive side")
        self.assertIn("260 of 20000 segments", found["n3"].evidence)
        # a host the timings named is left out of the peers' reference, not judged twice
        self.assertEqual({f.what for f in lossy(before, after, list(shares), named={"n3"})}, {"n3", "n6"})

    def test_peers_level_few_segments_and_missing_reads_name_nobody(self):
        level = {f"n{i}": (200 + 7 * i, 100) for i in range(1, 7)}   # every host resends ~1 %: the fabric
        self.assertEqual(lossy(*self.reports(level), list(level)), [])
        few = {f"n{i}": (0, 0) for i in range(1, 7)}
        few["n2"] = (30, 0)
        self.assertEqual(lossy(*self.reports(few, sent=500), list(few)), [])   # under 1000 segments
        before, after = self.reports({"n1": (0, 0), "n2": (300, 0), "n3": (0, 0), "n4": (0, 0)})
        del after["n2"]                                                       # no after read: not judged
        self.assertEqual(lossy(before, after, ["n1", "n2", "n3", "n4"]), [])


class Hostfile(unittest.TestCase):
    def write(self, text):
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(text)
        self.addCleanup(os.remove, path)
        return path

    def test_twice_or_no_slot_refused(self):
        self.assertEqual(read_hostfile(self.write("a slots=2\nb\n# c\n")), ["a", "b"])
        for text, why in (("a\nb\na slots=1\n", "host 'a' is given twice (first on line 1)"),
                          ("a slots=0\nb\n", "'slots=0': want slots=N with N >= 1"),
                          ("a\nb slots=x\n", "'slots=x'")):
            with self.assertRaises(InputError) as e:
                read_hostfile(self.write(text))
            self.assertIn(why, str(e.exception))

    @unittest.skipIf(gdrbench() is None, "no gdrbench binary")
    def test_refused_with_one_line_and_exit_2_before_anything_launches(self):
        for text in ("a\nb\na\n", "a slots=0\nb\n"):
            out = os.path.join(tempfile.gettempdir(), f"validate-refused-{os.getpid()}")
            p = subprocess.run([PYTHON, "-m", "gdranalysis", "validate", "--hostfile", self.write(text),
                                "--gdrbench", gdrbench(), "--out", out], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, PYTHONPATH=RESULTS))
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
            self.assertFalse(os.path.exists(out), "validate made its folder: it went past its input checks")

    @unittest.skipIf(gdrbench() is None, "no gdrbench binary")
    def test_a_host_that_does_not_exist_gets_one_line(self):
        # Open MPI's rsh agent of the emulated cluster answers for no such host as ssh would (exit
        # 255), and Open MPI adds its 20-line message; the table keeps one line and names the file.
        agent = os.path.join(REPO, "jobs", "cluster", "rsh-agent.sh")
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([PYTHON, "-m", "gdranalysis", "validate", "--hostfile",
                                self.write("localhost\nnosuch9\n"), "--gdrbench", gdrbench(), "--out", out,
                                "--launcher-args", f"--mca plm_rsh_agent {agent}", "--no-report",
                                "--min-bytes", "32K", "--max-bytes", "64K"], capture_output=True, text=True,
                               timeout=120, env=dict(os.environ, PYTHONPATH=RESULTS, OMPI_ALLOW_RUN_AS_ROOT="1",
                                                     OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
            with open(os.path.join(out, "validate.json")) as f:
                doc = json.load(f)
            why = doc["failed"].get("nosuch9", "")
            self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
            self.assertIn("no emulated host 'nosuch9'", why)
            self.assertIn(f"full text in {out}/probe-nosuch9.err", why)
            self.assertNotIn("\n", why)
            # The launch that failed for nosuch9 is made again without it: this host's report is there.
            self.assertEqual(len(doc["doctor"]), 1, doc["doctor"])
            lines = p.stdout.splitlines()
            at = [i for i, line in enumerate(lines) if line.startswith("nosuch9")]
            self.assertEqual(len(at), 1, p.stdout)
            self.assertTrue(lines[at[0] + 1].startswith("#"), "the row runs on to a second line")


if __name__ == "__main__":
    unittest.main()
