"""jobs/cluster/rejudge_trials.py counts what validate's verdict counts: on an archived 16-host
trial (a flap of fz15 that validate named live as the slow link fz15->fz16), the re-judge names
both hosts of the link, as the live verdict made both suspect, and scores the bad host found and
its partner as a healthy host named. Its first version counted the model's host findings only,
and showed that trial as nothing named."""

from __future__ import annotations

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
REJUDGE = os.path.join(REPO, "jobs", "cluster", "rejudge_trials.py")
SEQ = 73


class RejudgeCountsLinks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gdr-rejudge-")
        with tarfile.open(ARCHIVE + "-runs.tar.xz") as t:
            t.extractall(cls.tmp, members=[t.getmember(f"gen-16-{SEQ}/{f}")
                                           for f in ("run1.h5", "doctor.json", "counters-end.json")])
        cls.trial = next(t for line in open(ARCHIVE + ".jsonl", encoding="utf-8")
                         if (t := json.loads(line))["seq"] == SEQ)
        cls.jsonl = os.path.join(cls.tmp, "trial.jsonl")
        with open(cls.jsonl, "w", encoding="utf-8") as f:
            f.write(json.dumps(cls.trial) + "\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_link_names_both_its_hosts_as_validate_did(self):
        self.assertEqual(self.trial["named"], ["fz15", "fz16"])   # the live verdict, as archived
        self.assertEqual(self.trial["findings"][0]["kind"], "link")
        p = subprocess.run([sys.executable, REJUDGE, self.jsonl, "--runs", self.tmp],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        row = next(line for line in p.stdout.splitlines() if line.startswith("16h"))
        self.assertIn("now fz15: link fz15->fz16, fz16: link fz15->fz16", row)
        table = next(line for line in p.stdout.splitlines() if line.startswith("| 16 | intermittent"))
        cells = [c.strip() for c in table.strip("|").split("|")]
        self.assertTrue(cells[3].startswith("1/1 "), table)      # recall now: the bad host found
        self.assertTrue(cells[5].startswith("1/15 "), table)     # and its healthy partner named

    def test_missing_run_files_exit_1(self):
        p = subprocess.run([sys.executable, REJUDGE, self.jsonl, "--runs", os.path.join(self.tmp, "none")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("missing", p.stderr)


if __name__ == "__main__":
    unittest.main()
