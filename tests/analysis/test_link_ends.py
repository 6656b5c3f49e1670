"""A link, or the host at one of its ends (link_ends.py), and jobs/cluster/rejudge_trials.py
counting what validate's verdict counts, on archived runs of the emulated cluster:
- a 16-host flap of fz15 that validate named live as the slow link fz15->fz16 (its healthy
  partner suspect): fz15's flows with its other partners hold slow phases beyond its peers', so
  the verdict is fz15, intermittent, and no link; re-judged, the trial reads that;
- real slow links (a rate limit on one link, 8 and 16 hosts) stay links, and the re-judge
  names both their hosts, as validate's verdict makes both suspect (its first version counted
  host findings only)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from gdrtest import REPO

ARCHIVE = os.path.join(REPO, "results", "archive", "20261206_cluster16_validate-by-fault-class-more")
QUIET = os.path.join(REPO, "results", "archive", "20261204_cluster_validate-quiet-runs.tar.xz")
REJUDGE = os.path.join(REPO, "jobs", "cluster", "rejudge_trials.py")
SEQ = 73
LINKS = {"8-mpi-20261204T155135Z": ("gm3", "gm6"), "16-mpi-20261204T162109Z": ("gm5", "gm12")}


class LinkOrItsEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gdr-rejudge-")
        with tarfile.open(ARCHIVE + "-runs.tar.xz") as t:
            t.extractall(cls.tmp, members=[t.getmember(f"gen-16-{SEQ}/{f}")
                                           for f in ("run1.h5", "doctor.json", "counters-end.json")])
        with tarfile.open(QUIET) as t:
            for name in LINKS:   # each in a folder of its own, as rejudge_trials reads a trial
                member = t.getmember(f"runs/{name}.h5")
                member.name = f"{name}/run1.h5"
                t.extract(member, cls.tmp)
        cls.trial = next(t for line in open(ARCHIVE + ".jsonl", encoding="utf-8")
                         if (t := json.loads(line))["seq"] == SEQ)
        cls.jsonl = os.path.join(cls.tmp, "trial.jsonl")
        with open(cls.jsonl, "w", encoding="utf-8") as f:
            f.write(json.dumps(cls.trial) + "\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_flap_seen_as_a_link_is_its_host(self):
        from gdranalysis.factor_model import attribute
        from gdranalysis.schema import load_run
        self.assertEqual(self.trial["named"], ["fz15", "fz16"])   # the live verdict, as archived
        self.assertEqual(self.trial["findings"][0]["what"], "fz15->fz16")
        att = attribute(load_run(os.path.join(self.tmp, f"gen-16-{SEQ}", "run1.h5")))
        self.assertEqual(att.links, [])
        self.assertEqual({h: (p.cls, p.side) for h, p in att.hosts.items()}, {"fz15": ("intermittent", "send side")})
        self.assertIn("the host, not the link", att.hosts["fz15"].evidence)

    def test_the_rejudge_reads_the_trial_so(self):
        p = subprocess.run([sys.executable, REJUDGE, self.jsonl, "--runs", self.tmp],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        row = next(line for line in p.stdout.splitlines() if line.startswith("16h"))
        self.assertTrue(row.endswith("then fz15,fz16 now fz15: intermittent"), row)
        table = next(line for line in p.stdout.splitlines() if line.startswith("| 16 | intermittent"))
        cells = [c.strip() for c in table.strip("|").split("|")]
        self.assertEqual([c.split(" [")[0] for c in cells[2:]], ["1/1", "1/1", "1/15", "0/15"], table)

    def test_real_links_stay_links_and_name_both_hosts(self):
        spec = importlib.util.spec_from_file_location("rejudge_trials", REJUDGE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        a = argparse.Namespace(z=5.0, min_slowdown=7.0, p0=0.01)
        for name, (x, y) in LINKS.items():
            named = mod.now_named(os.path.join(self.tmp, name, "run1.h5"), a)
            self.assertEqual(set(named), {x, y}, name)
            self.assertTrue(all(c.startswith("link ") for c in named.values()), named)

    def test_missing_run_files_exit_1(self):
        p = subprocess.run([sys.executable, REJUDGE, self.jsonl, "--runs", os.path.join(self.tmp, "none")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("missing", p.stderr)


if __name__ == "__main__":
    unittest.main()
