"""The analysis commands as a gate, and their own input, on real runs.

- compare, suspects and history exit 4 when a run read had wrong results or
  did not end `complete` (before: compare exited 0 with a `# note`).
- a file cut short (a case without its data, status `failed`) is read with
  a note, its other cases used; in a `complete` file the same is an error.
- every flag value and environment variable: one line and exit 2, never a
  traceback, never unbounded work; a fuzz of the numeric flags (seeded).
- `gdrbench compare` with a GDR_PYTHON that does not run the analysis, or a
  GDR_ANALYSIS_DIR without it: exit 2, never "no regression"."""

import contextlib
import io
import os
import random
import subprocess
import unittest

from gdrtest import TempDirCase, analysis, copy, gdrbench, make_run, mpi_env, set_root_attr

from gdranalysis import cli

RUN_ARGS = ["-t", "allreduce", "-b", "8", "-e", "1K", "-n", "10"]
# suspects needs point-to-point cases between every pair: 3 ranks.
GATE_ARGS = ["-t", "allreduce,latency", "--pairs", "all", "-b", "8", "-e", "1K", "-n", "10"]
UNTRUSTED = 4


def one_line_exit_2(test, r, what):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    test.assertEqual(r.returncode, 2, f"{what}: exit {r.returncode}\n{r.stderr}")
    test.assertEqual(len(lines), 1, f"{what}: not one line: {lines}")
    test.assertNotIn("Traceback", r.stderr, what)


class Gate(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = make_run(os.path.join(cls.tmp, "a.h5"), *GATE_ARGS, np=3)
        cls.w = os.path.join(cls.tmp, "wrong.h5")
        exe = gdrbench()
        env = dict(mpi_env(), GDR_SELFTEST_CORRUPT="1")
        r = subprocess.run(["mpirun", "--oversubscribe", "-np", "3", exe, "run", "-T", "mpi", *GATE_ARGS,
                            "--output", cls.w], env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 4, f"the corrupted run exited {r.returncode}\n{r.stderr}"

    def test_compare_wrong_results_fails_the_gate(self):
        for base, new in ((self.a, self.w), (self.w, self.a)):
            r = analysis("compare", base, new, "--resamples", "100")
            self.assertEqual(r.returncode, UNTRUSTED, r.stderr)
            self.assertIn("wrong results", r.stderr)
        r = analysis("compare", self.a, self.a, "--resamples", "100")
        self.assertIn(r.returncode, (0, 1), r.stderr)

    def test_not_complete_fails_the_gate(self):
        f = copy(self.a, self.p("failed.h5"))
        set_root_attr(f, "status", "interrupted")
        r = analysis("compare", self.a, f, "--resamples", "100")
        self.assertEqual(r.returncode, UNTRUSTED, r.stderr)
        self.assertIn("not complete", r.stderr)

    def test_suspects_and_history_follow(self):
        self.assertEqual(analysis("suspects", self.w).returncode, UNTRUSTED)
        r = analysis("history", self.a, self.w, "--case", "test=allreduce,bytes=8")
        self.assertEqual(r.returncode, UNTRUSTED, r.stderr)
        # The good run is trusted: 0, or 1 where this machine's load made a rank a suspect.
        self.assertIn(analysis("suspects", self.a).returncode, (0, 1))

    def test_binary_passes_the_code_through(self):
        r = subprocess.run([gdrbench(), "compare", self.a, self.w, "--resamples", "100"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, UNTRUSTED, r.stderr)

    def test_partial_file_is_read_with_a_note(self):
        import h5py
        f = copy(self.a, self.p("cut.h5"))
        with h5py.File(f, "r+") as h:
            last = sorted(h["cases"].keys())[-1]
            del h[f"cases/{last}/times"]
        r = analysis("stragglers", f)  # complete, yet damaged: an error
        self.assertEqual(r.returncode, 2, r.stderr)
        set_root_attr(f, "status", "failed")
        set_root_attr(f, "error", "rank 0: --output x.h5: HDF5 H5Dwrite failed (No space left on device)")
        r = analysis("stragglers", f)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("incomplete", r.stdout + r.stderr)
        self.assertEqual(analysis("compare", self.a, f, "--resamples", "100").returncode, UNTRUSTED)


class OwnInput(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = make_run(os.path.join(cls.tmp, "a.h5"), *RUN_ARGS)

    def test_bad_values_one_line(self):
        a = self.a
        cases = [
            ("compare", a, a, "--resamples", "1000000000000"), ("compare", a, a, "--resamples", "1e3"),
            ("compare", a, a, "--confidence", "nan"), ("compare", a, a, "--confidence", "1"),
            ("compare", a, a, "--threshold", "nan"), ("compare", a, a, "--threshold", "1e300"),
            ("compare", a, a, "--seed", "-1"), ("compare", a, a, "--seed", "99999999999"),
            ("compare", a, a, "--run-noise", "nan"), ("compare", a, a, "--run-noise", "1e9"),
            ("suspects", a, "--z", "nan"), ("suspects", a, "--z", "inf"), ("suspects", a, "--p0", "0"),
            ("suspects", a, "--alpha", "1.5"), ("suspects", a, "--min-slowdown", "-inf"),
            ("stragglers", a, "--threshold", "NaN"), ("report", a, "--html", "/x.html", "--seed", "nan"),
        ]
        for args in cases:
            one_line_exit_2(self, analysis(*args), " ".join(args[:1] + args[-2:]))

    def test_history_table_names_any_bytes(self):
        odd = copy(self.a, os.path.join(self.tmp, "it's\nnew.h5"))
        r = analysis("history", self.a, odd, "--case", "test=allreduce,bytes=8,reference=0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("$'it\\'s\\nnew.h5'", r.stdout)
        self.assertFalse(any(l.startswith("new.h5") for l in r.stdout.splitlines()), r.stdout)

    def test_a_run_without_cases_says_so(self):
        """A run that holds no case: one line naming it and exit 2, not a table of 0 cases, a page or
        an empty export with exit 0."""
        import h5py
        empty = copy(self.a, self.p("empty.h5"))
        with h5py.File(empty, "r+") as f:
            del f["cases"]
            f.create_group("cases")
        for args in (("stragglers", empty), ("report", empty, "--html", self.p("e.html")),
                     ("export", "--openmetrics", empty)):
            r = analysis(*args)
            one_line_exit_2(self, r, args[0])
            self.assertIn("holds no case", r.stderr)
        self.assertFalse(os.path.exists(self.p("e.html")))

    def test_read_timeout_checked(self):
        for v in ("abc", "nan", "-1", "0", "1e9"):
            r = analysis("stragglers", self.a, env_extra={"GDR_READ_TIMEOUT": v})
            one_line_exit_2(self, r, f"GDR_READ_TIMEOUT={v}")
            self.assertIn("GDR_READ_TIMEOUT", r.stderr)
        self.assertEqual(analysis("stragglers", self.a, env_extra={"GDR_READ_TIMEOUT": "30"}).returncode, 0)

    def test_validate_environment_checked(self):
        hosts = self.p("hosts")
        with open(hosts, "w") as f:
            f.write("node1\nnode2\n")
        out = self.p("validate-out")
        for env, args in (({"GDR_VALIDATE_LAUNCHER_ARGS": "--mca '"}, ["--gdrbench", "/bin/true"]),
                          ({"GDR_GDRBENCH": "/nonexistent/gdrbench"}, [])):
            r = analysis("validate", "--hostfile", hosts, "--out", out, *args, env_extra=env)
            one_line_exit_2(self, r, str(env))
            self.assertIn(f"environment {next(iter(env))}=", r.stderr)
        r = analysis("validate", "--hostfile", hosts, "--out", out, "--gdrbench", "/bin/true", "--launcher-args", "'")
        one_line_exit_2(self, r, "--launcher-args")
        self.assertIn("--launcher-args", r.stderr)

    def test_interpreter_and_folder_checked(self):
        exe = gdrbench()
        for env, name in (({"GDR_PYTHON": "/bin/true"}, "GDR_PYTHON"), ({"GDR_PYTHON": "/bin/false"}, "GDR_PYTHON"),
                          ({"GDR_ANALYSIS_DIR": self.tmp}, "GDR_ANALYSIS_DIR")):
            r = subprocess.run([exe, "compare", self.a, self.a], env=dict(os.environ, **env),
                               capture_output=True, text=True, timeout=120)
            one_line_exit_2(self, r, str(env))

    def test_fuzz_numeric_flags(self):
        """300 seeded draws of odd values into every numeric flag: exit 0, 1,
        2 or 4 only, never 3 (a traceback), in-process and fast."""
        flags = {"compare": ["--threshold", "--confidence", "--resamples", "--seed", "--run-noise"],
                 "suspects": ["--z", "--min-slowdown", "--p0", "--alpha"],
                 "stragglers": ["--threshold"]}
        odd = ["", "nan", "-nan", "inf", "-inf", "1e309", "-1e309", "0", "-0", "-1", "1", "0.5", "100",
               "1e6", "1e18", "9" * 40, "abc", "%", "50%", "1,5", "0x10", " 5", "5 ", "1_000", "\u0661",
               "1e-400", "True", "None", "--", "-", "=", "\t"]
        rng = random.Random(31)
        codes = {}
        for _ in range(300):
            cmd = rng.choice(sorted(flags))
            flag, val = rng.choice(flags[cmd]), rng.choice(odd)
            if cmd == "compare" and flag == "--resamples" and val in ("1e6", "100"):
                val = "1000000000000"  # a valid large count takes minutes: its bound is tested above
            argv = [cmd, self.a] + ([self.a, "--resamples", "100"] if cmd == "compare" and flag != "--resamples"
                                    else [self.a] if cmd == "compare" else []) + [f"{flag}={val}", "--json"]
            err, out = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                try:
                    code = cli.main(argv)
                except SystemExit as e:
                    code = e.code
            codes[code] = codes.get(code, 0) + 1
            self.assertIn(code, (0, 1, 2, 4), f"{argv}: exit {code}\n{err.getvalue()[-1500:]}")
            self.assertNotIn("Traceback", err.getvalue(), argv)
        print(f"\n  fuzz of numeric flags: exit codes {codes}")


if __name__ == "__main__":
    unittest.main()
