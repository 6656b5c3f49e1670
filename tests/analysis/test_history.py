"""`history` across real runs whose start times are not in name order, and
the archive in results/archive/."""

import glob
import json
import os
import re
import subprocess

import h5py

from gdrtest import RESULTS, TempDirCase, analysis, copy, make_run, set_root_attr

from gdranalysis.schema import load_run

ARCHIVE = os.path.join(RESULTS, "archive")
NAME = re.compile(r"^(\d{8}T\d{6})_([A-Za-z0-9.-]+)_(\d+)r(_[A-Za-z0-9.-]+)?\.h5$")


class History(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        src = make_run(os.path.join(cls.tmp, "src.h5"), "-t", "allreduce", "-e", "4K", "-n", "5")
        # Three archived runs; file names deliberately not in date order.
        cls.dates = {"c.h5": "2025-01-03T00:00:00Z", "a.h5": "2025-03-01T12:00:00Z",
                     "b.h5": "2024-12-31T23:59:59Z"}
        cls.files = []
        # Copies of one run: their times differ only by the factor set below
        # (a second timed run differed from the first by up to 1.5x on the
        # loaded CI host, and vs_previous then read 1.95, not 3).
        for name, date in cls.dates.items():
            p = os.path.join(cls.tmp, name)
            copy(src, p)
            set_root_attr(p, "start_utc", date)
            cls.files.append(p)
        with h5py.File(os.path.join(cls.tmp, "a.h5"), "r+") as f:   # make the newest one slower
            for g in f["cases"].values():
                g["times"][...] = g["times"][()] * 3

    def test_sorted_by_start_time(self):
        r = analysis("history", *self.files, "--case", "test=allreduce,transport=mpi,reference=0,bytes=1K",
                     "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(len(doc["trends"]), 1)
        pts = doc["trends"][0]["points"]
        self.assertEqual([p["file"] for p in pts], ["b.h5", "c.h5", "a.h5"])
        self.assertEqual([p["start_utc"] for p in pts], sorted(self.dates.values()))
        self.assertAlmostEqual(pts[0]["vs_first"], 1.0)
        self.assertAlmostEqual(pts[2]["vs_previous"], 3.0, places=6)   # the slowed-down copy
        t = analysis("history", *self.files, "--case", "test=allreduce,reference=0,bytes=1K")
        self.assertEqual(t.returncode, 0)
        lines = [l for l in t.stdout.splitlines() if l.startswith("20")]
        self.assertEqual([l.split()[1] for l in lines], ["b.h5", "c.h5", "a.h5"])

    def test_several_matches_and_plot(self):
        png = self.p("trend.png")
        r = analysis("history", *self.files, "--case", "test=allreduce,bytes=1K", "--plot", png)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("matches 2 distinct cases", r.stdout)   # ours and the MPI reference row
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_file_name_date_when_start_missing(self):
        p = copy(self.files[0], self.p("20200101T000000_host_2r.h5"))
        set_root_attr(p, "start_utc", None)
        r = analysis("history", p, *self.files, "--case", "test=allreduce,reference=0,bytes=8", "--json")
        pts = json.loads(r.stdout)["trends"][0]["points"]
        self.assertEqual(pts[0]["file"], "20200101T000000_host_2r.h5")

    def test_bad_files_are_skipped_and_bad_selections_refused(self):
        bad = self.p("bad.h5")
        with open(bad, "w") as f:
            f.write("not hdf5")
        r = analysis("history", bad, *self.files, "--case", "test=allreduce,bytes=8,reference=0")
        self.assertEqual(r.returncode, 0)
        self.assertIn("skipped", r.stderr)
        self.assertEqual(analysis("history", *self.files, "--case", "test=nope").returncode, 2)
        r = analysis("history", *self.files, "--case", "colour=red")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown key", r.stderr)
        self.assertEqual(analysis("history", bad, "--case", "test=allreduce").returncode, 2)
        self.assertEqual(analysis("history", *self.files).returncode, 2)   # --case is required


class Archive(TempDirCase):
    """Every file in results/archive/ is readable, named to sort by date,
    and described in results/archive/README.md."""

    def test_archive(self):
        files = sorted(glob.glob(os.path.join(ARCHIVE, "*.h5")))
        with open(os.path.join(ARCHIVE, "README.md")) as f:
            readme = f.read()
        # Files committed to the repository must be described in the README;
        # runs jobs/nightly.sh archives locally need not be.
        try:
            tracked = set(subprocess.run(["git", "ls-files", "--", "*.h5"], cwd=ARCHIVE, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.split())
        except OSError:
            tracked = set()
        for p in files:
            name = os.path.basename(p)
            m = NAME.match(name)
            self.assertIsNotNone(m, f"{name}: not <yyyymmddTHHMMSS>_<host>_<np>r[_label].h5")
            run = load_run(p)
            self.assertEqual(run.start.strftime("%Y%m%dT%H%M%S"), m.group(1), name)
            self.assertEqual(run.nranks, int(m.group(3)), name)
            if name in tracked:
                self.assertIn(name, readme)
        if len(files) > 1:
            r = analysis("history", *files, "--case", "test=allreduce,reference=0,bytes=1K,transport=mpi",
                         "--json")
            # The archive keeps runs that failed (why they failed is the record):
            # history then exits 4, the gate's code for an untrusted input.
            untrusted = any(load_run(p).status != "complete" or any((c.get("wrong") or 0) > 0
                                                                   for c in load_run(p).cases) for p in files)
            self.assertEqual(r.returncode, 4 if untrusted else 0, r.stderr)

    def test_old_names_are_aliases(self):
        """Every old name in aliases.tsv names a file that is here under its new name, and the
        README's table gives both (an old link resolves through either)."""
        with open(os.path.join(ARCHIVE, "README.md")) as f:
            readme = f.read()
        with open(os.path.join(ARCHIVE, "aliases.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
        self.assertEqual(rows[0], ["old", "new"])
        self.assertTrue(rows[1:])
        for row in rows[1:]:
            self.assertEqual(len(row), 2, row)
            old, new = row
            self.assertTrue(os.path.isfile(os.path.join(ARCHIVE, new)), f"{old}: {new} is not in the archive")
            self.assertFalse(os.path.exists(os.path.join(ARCHIVE, old)), f"{old}: still here under its old name")
            self.assertIn(f"| `{old}` | `{new}` |", readme)
        self.assertEqual(len({r[0] for r in rows[1:]}), len(rows) - 1, "an old name twice")
