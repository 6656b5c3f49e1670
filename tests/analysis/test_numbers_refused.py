"""Every number the analysis reads goes through gdranalysis.numbers: each flag
of its table refuses NaN, infinities, garbage and the values just outside its
range with one line naming the value and the range (exit 2, no traceback), and
takes the values at its ends; noise-model files, simulate fleet's rows and the
environment are read the same way; sizes of work are bounded before any work
(a bad-host count larger than the fleet, an absurd host count)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import unittest

from gdrtest import TempDirCase, analysis
from numbers_cli import bad_values, flag_rows, good_values, main

from gdranalysis import numbers

GOOD_MODEL = {"sources": ["a/run1.h5"], "links": 12, "bytes": [1048576, 2097152], "base_s": [0.01, 0.02],
              "iters": [8, 8], "persist_sd": 0.01, "size_sd": 0.01, "tail_p": 0.0, "tail_up": 0.5,
              "tail_excess": 0.0, "iter_q": [[-0.1, 0.0, 0.1], [-0.1, 0.0, 0.1]]}
GOOD_ROW = {"hosts": 64, "gpus": 8, "class": "link", "severity": 10.0, "trials": 2, "found": 2,
            "recall_ci": [0.34, 1.0], "wrong_hosts": 0, "hosts_judged": 124, "host_fp_ci": [0.0, 0.03],
            "schedule_s_host_rounds": 100.0, "schedule_s_rank_rounds": 800.0, "max_rounds": 63, "bad": 1,
            "alpha": 0.001}


class NumbersRefused(TempDirCase):
    def refused(self, argv, what, env=None):
        code, err = main(*argv, env=env)
        lines = [x for x in err.splitlines() if x.strip()]
        self.assertEqual(code, 2, f"{what}: exit {code}\n{err}")
        self.assertEqual(len(lines), 1, f"{what}: not one line: {lines}")
        self.assertNotIn("Traceback", err, what)
        return lines[0]

    def test_every_flag_of_the_table(self):
        """Each flag refuses its bad values with the range in the line; its ends pass its type."""
        seen = 0
        for name, head, flag, b in flag_rows():
            for v in bad_values(b):
                line = self.refused(head + [f"{flag}={v}"], f"{flag} {v!r}")
                self.assertIn(b.text(), line, f"{flag} {v!r}: the range is not named")
            parse = numbers.arg(name)
            for v in good_values(b):
                parse(v)
            seen += 1
        self.assertGreaterEqual(seen, 30)

    def test_lists_and_cells(self):
        for argv in (["--hosts", "4,100000"], ["--hosts", "2"], ["--hosts", "4,x"], ["--hosts", ","],
                     ["--cells", "link:nan"], ["--cells", "link:-5"], ["--cells", "link:"], ["--cells", "nic-both:1e9"]):
            self.refused(["simulate", "fleet", "--noise", "/nonexistent"] + argv, " ".join(argv))
        line = self.refused(["simulate", "trials", "--noise", "/nonexistent", "--hosts", "200", "--ranks-per-host",
                             "8"], "trials of 1600 ranks")
        self.assertIn("1600", line)
        self.refused(["compare", "a.h5", "a.h5", "--run-noise", "nan"], "--run-noise nan")

    def model(self, name, **change):
        d = dict(GOOD_MODEL, **change)
        path = self.p(name)
        with open(path, "w") as f:
            json.dump(d, f)  # NaN and Infinity as Python's json writes them
        return path

    def sim(self, model, *extra):
        return ["simulate", "trials", "--noise", model, "--hosts", "3", "--trials", "1", "--cells", "healthy"] + list(extra)

    def test_noise_model_fields(self):
        """A model's fields are refused one by one (the file's name and the field in the line);
        the good model simulates."""
        code, err = main(*self.sim(self.model("good.json")))
        self.assertEqual(code, 0, err)
        bad = {"bytes": [[0, 1], [1, 2, 3], [], "x", [1.5, 2]], "base_s": [[float("nan"), 1], [-1, 1], [1e9, 1]],
               "iters": [[1e9, 8], [-8, 8], [8]], "persist_sd": [float("inf"), -1, "x", None],
               "size_sd": [1e300], "tail_p": [2, float("nan")], "tail_up": [-0.5], "tail_excess": [1e9],
               "iter_q": [[[0.0], [0.0, 1.0]], [[float("nan"), 0], [0, 1]], [[0, 1e9], [0, 1]], "x"],
               "links": [-1, 0.5], "sources": ["x"]}
        for key, values in bad.items():
            for i, v in enumerate(values):
                line = self.refused(self.sim(self.model(f"{key}{i}.json", **{key: v})), f"{key}={v!r}")
                self.assertIn(key, line)
        for name, text in (("list.json", "[1, 2]"), ("bin.json", "\x00\xff\xfe"), ("empty.json", "")):
            with open(self.p(name), "w", encoding="latin-1") as f:
                f.write(text)
            self.refused(self.sim(self.p(name)), name)
        self.refused(self.sim(self.tmp), "a folder as the model")

    def test_fleet_rows(self):
        """simulate table: each row's numbers checked; good rows make the table."""
        def rows(name, *rs):
            with open(self.p(name), "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rs))
            return self.p(name)
        code, err = main("simulate", "table", rows("good.jsonl", GOOD_ROW))
        self.assertEqual(code, 0, err)
        bads = [{"hosts": -1}, {"hosts": "x"}, {"hosts_judged": 0}, {"alpha": float("nan")},
                {"recall_ci": [0.1]}, {"host_fp_ci": [0, float("inf")]}, {"schedule_s_host_rounds": None},
                {"class": 3}, {"found": 1.5}, {"trials": 1e300}]
        for i, change in enumerate(bads):
            self.refused(["simulate", "table", rows(f"bad{i}.jsonl", dict(GOOD_ROW, **change))], str(change))
        self.refused(["simulate", "table", rows("drop.jsonl", {k: v for k, v in GOOD_ROW.items()
                                                               if k != "wrong_hosts"})], "no wrong_hosts")
        self.refused(["simulate", "table", rows("list.jsonl", [1, 2])], "a row that is a list")
        self.refused(["simulate", "table", rows("none.jsonl")], "no rows")

    def test_bad_hosts_larger_than_the_fleet(self):
        """Refused before any work, where it hung after its first row."""
        model = self.model("m.json")
        t0 = time.monotonic()
        line = self.refused(["simulate", "fleet", "--noise", model, "--hosts", "8,4", "--bad-hosts", "3",
                             "--cells", "healthy,link:10"], "--bad-hosts 3 of 4 hosts")
        self.assertIn("--bad-hosts 3", line)
        self.refused(["simulate", "fleet", "--noise", model, "--hosts", "4", "--bad-hosts", "5",
                      "--cells", "nic-both:10"], "--bad-hosts 5 of 4 hosts")
        self.assertLess(time.monotonic() - t0, 5)

    def test_read_timeout_bounded(self):
        """Far below a millisecond, a good file's read was called corrupt: now a range."""
        good = self.model("a.h5")  # any file: the variable is read first
        for v in ("0.000001", "0.5", "nan", "1e9", "x"):
            line = self.refused(["stragglers", good], v, env={"GDR_READ_TIMEOUT": v})
            self.assertIn("GDR_READ_TIMEOUT", line)
            self.assertIn(numbers.BOUNDS["GDR_READ_TIMEOUT"].text(), line)

    def test_listed_inputs_through_the_real_command(self):
        """The inputs that gave a traceback: a binary hostfile, sizes that are no numbers, a
        negative seed; through `python3 -m gdranalysis`, as gdrbench runs it."""
        binary = self.p("hosts.bin")
        with open(binary, "wb") as f:
            f.write(bytes(range(256)) * 4)
        for args in (["validate", "--hostfile", binary, "--gdrbench", "/bin/false", "--out", self.p("o")],
                     ["validate", "--hostfile", binary, "--min-bytes", "lots"],
                     ["validate", "--hostfile", binary, "--max-bytes", "1.5M"],
                     ["simulate", "fleet", "--noise", self.p("m.json"), "--seed", "-1"]):
            r = analysis(*args)
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            self.assertEqual((r.returncode, len(lines)), (2, 1), f"{args}: {r.stderr}")
            self.assertNotIn("Traceback", r.stderr)
        self.assertFalse(os.path.exists(self.p("o")))


if __name__ == "__main__":
    unittest.main()
