"""`report`: HTML from a real run, with a baseline, rendered by Chromium."""

import base64
import os
import re
import shutil
import subprocess
import tempfile

import h5py
import numpy as np

from gdrtest import TempDirCase, analysis, copy, make_run, scale_past_spread

PNG = b"\x89PNG\r\n\x1a\n"


def add_cuda_paths(path):
    """Give a host-only run the device-memory cases a GPU run would have:
    every case again as mem=cuda path=direct, and as path=staged 1.5x slower
    (no GPU here; the report only needs both paths to draw the speedup)."""
    with h5py.File(path, "r+") as f:
        names = sorted(f["cases"])
        n = len(names)
        for i, name in enumerate(names):
            for j, (p, factor) in enumerate((("direct", 1.0), ("staged", 1.5))):
                new = f"{n + 2 * i + j:05d}"
                f.copy(f["cases"][name], f["cases"], name=new)
                g = f["cases"][new]
                g.attrs["mem"] = "cuda"
                g.attrs["path"] = p
                g["times"][...] = g["times"][()] * factor
        f.attrs["cases_completed"] = np.int64(3 * n)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def images(html):
    """{id: png bytes} of the embedded images."""
    out = {}
    for m in re.finditer(r'<img id="([^"]+)"[^>]*src="data:image/png;base64,([^"]+)"', html):
        out[m.group(1)] = base64.b64decode(m.group(2))
    return out


class Report(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = make_run(os.path.join(cls.tmp, "base.h5"), "-t", "allreduce,latency,bw", "-e", "64K",
                            "-n", "10")
        cls.new = copy(cls.base, os.path.join(cls.tmp, "new.h5"))
        with h5py.File(cls.new) as f:
            cls.slowed = next(n for n, g in f["cases"].items() if g.attrs["test"] == "bw"
                              and g.attrs["bytes"] == 4096)
        scale_past_spread(cls.new, cls.slowed, 2.0)  # a regression whatever the load did
        cls.gpu = copy(cls.base, os.path.join(cls.tmp, "gpu.h5"))
        add_cuda_paths(cls.gpu)
        # Each report once (a few seconds each on a busy 2-core machine).
        cls.out = {}
        for name, args in (("alone", [cls.base]), ("cmp", [cls.new, "--baseline", cls.base]),
                           ("gpu", [cls.gpu])):
            path = os.path.join(cls.tmp, f"{name}.html")
            cls.out[name] = (analysis("report", *args, "--html", path), path)

    def test_run_alone(self):
        r, out = self.out["alone"]
        self.assertEqual(r.returncode, 0, r.stderr)
        html = read(out)
        imgs = images(html)
        links = {n for n in imgs if n.startswith("fig-links-")}  # the /links heat maps
        self.assertEqual(set(imgs) - links, {"fig-busbw", "fig-latency", "fig-heatmap-allreduce", "fig-heatmap-bw"})
        self.assertTrue(any(n.startswith("fig-links-bw_") for n in links), sorted(imgs))
        for name, png in imgs.items():
            self.assertTrue(png.startswith(PNG), name)
            self.assertGreater(len(png), 10000, name)
        self.assertIn("No case ran on both the direct and the staged path", html)
        # Self-contained: nothing fetched from elsewhere.
        self.assertNotRegex(html, r'(src|href)="(?!data:)')
        self.assertNotIn("<script", html)

    def test_with_baseline_and_both_paths(self):
        r, out = self.out["cmp"]
        self.assertEqual(r.returncode, 0, r.stderr)
        html = read(out)
        self.assertIn("fig-compare", images(html))
        self.assertIn('<tr class="regression"><td>bw0&gt;1 mpi host direct 4K</td>', html)
        r, out2 = self.out["gpu"]
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fig-speedup", images(read(out2)))

    def test_bad_input(self):
        r = analysis("report", self.p("nope.h5"), "--html", self.p("x.html"))
        self.assertEqual(r.returncode, 2)
        self.assertFalse(os.path.exists(self.p("x.html")))
        r = analysis("report", self.base, "--html", "/nonexistent-dir/x.html")
        self.assertEqual(r.returncode, 2)

    def test_renders_in_chromium(self):
        browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
        if not browser:
            self.skipTest("no chromium (jobs/deps/debian-report.txt installs it)")
        r, out = self.out["cmp"]
        self.assertEqual(r.returncode, 0, r.stderr)
        shot = self.p("shot.png")
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,2400",
               "file://" + os.path.abspath(out)]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
        self.assertTrue(os.path.exists(shot), f"no screenshot ({r.returncode}): {r.stderr[-1500:]}")
        self.assertGreater(os.path.getsize(shot), 20000)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mpimg
        img = mpimg.imread(shot)[..., :3]
        self.assertEqual(img.shape[:2], (2400, 1200))
        # Plots present: many strongly coloured pixels (lines, markers, heat
        # map), not a blank or text-only page.
        sat = img.max(axis=2) - img.min(axis=2)
        self.assertGreater(int((sat > 0.3).sum()), 2000)
        self.assertGreater(float(img.std()), 0.05)
