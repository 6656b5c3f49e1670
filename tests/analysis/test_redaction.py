"""The one redaction (results/gdranalysis/redaction_shapes.tsv, read by redaction.py and compiled
into gdrbench): every row has a case in tests/unit/redaction_cases.tsv and each case gives its
expected text here as in C++ (test_redaction.cpp); the operators' docs list the table's rows; and
real runs (mpirun -np 2, host memory; validate on this host) store a secret given in the
environment, the command line, a file name and --launcher-args in none of their outputs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import unittest

from gdrtest import REPO, analysis, gdrbench, make_run, mpi_env
from gdranalysis.redaction import MARK, looks_secret, read_table, redact, redact_obj

CASES = os.path.join(REPO, "tests", "unit", "redaction_cases.tsv")
DOC = os.path.join(REPO, "docs", "operators", "environment.md")
SECRET = "Zq9vT4mWx8Lp2Rk7"  # mixed case and digits: also what the entropy rows catch


def cases():
    rows = []
    with open(CASES, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    for line in lines[1:]:
        rows.append(line.split("\t"))
    return rows


class Table(unittest.TestCase):
    def test_every_case_gives_its_expected_text(self):
        for row, text, expected in cases():
            self.assertEqual(redact(text), expected, f"row {row}: {text}")
            self.assertEqual(redact(expected), expected, f"twice: {expected}")
            self.assertEqual(text != expected, row != "keep", f"row {row}: {text}")

    def test_every_row_has_a_case(self):
        cased = {c[0] for c in cases()}
        for r in read_table():
            self.assertIn(r["name"], cased, f"row {r['name']} of redaction_shapes.tsv has no case")

    def test_docs_list_every_row(self):
        with open(DOC, encoding="utf-8") as f:
            doc = f.read()
        listed = re.findall(r"^\| `([a-z0-9-]+)` \| (\S+) \| (.*) \|$", doc, re.M)
        self.assertEqual([(n, k, w) for n, k, w in listed],
                         [(r["name"], r["kind"], r["what"]) for r in read_table()],
                         "docs/operators/environment.md's table of redaction rows differs from redaction_shapes.tsv")

    def test_no_flag_of_gdrbench_is_redacted(self):
        """Every flag of every subcommand (read as fuzz_cli reads them) stays in a stored command
        line with its value: a flag named like a credential would lose what reproduces the run."""
        if gdrbench() is None:
            self.skipTest("no gdrbench binary")
        import sys
        sys.path.insert(0, os.path.join(REPO, "tests", "fuzz"))
        import fuzz_cli
        flags = [f for s in fuzz_cli.CPP_SUBS for f, _ in fuzz_cli.cpp_flags(gdrbench(), s)]
        flags += [f for fl in fuzz_cli.python_flags().values() for f, _ in fl if f.startswith("-")]
        self.assertGreater(len(flags), 100)
        for f in flags:
            for text in (f"gdrbench {f} 4", f"gdrbench {f}=4"):
                self.assertEqual(redact(text), text, f)

    def test_json_and_names(self):
        self.assertEqual(redact_obj({"a": ["--token=x", 1]}), {"a": [f"--token={MARK}", 1]})
        self.assertTrue(looks_secret("PGPASSWORD"))
        self.assertFalse(looks_secret("UCX_IB_BYPASS"))


class RealRuns(unittest.TestCase):
    """A secret in the environment, the command line, a file name and --launcher-args ends up in
    none of: HDF5 attributes (read back with h5py), JSON Lines, the table, the HTML report, the
    analysis' JSON, validate.json, validate.xml, commands.log."""

    def setUp(self):
        if gdrbench() is None:
            self.skipTest("no gdrbench binary")
        self.tmp = tempfile.mkdtemp(prefix="gdr-redact-")

    def assert_clean(self, what, text):
        self.assertNotIn(SECRET, text, f"{what} holds the secret")

    def test_run_report_and_validate_store_no_secret(self):
        import h5py
        d = os.path.join(self.tmp, f"token={SECRET}")
        os.mkdir(d)
        h5, jsonl = os.path.join(d, "run.h5"), os.path.join(self.tmp, f"password={SECRET}.jsonl")
        os.environ["UCX_PROXY_URL"] = f"https://alice:{SECRET}@proxy.example"  # env, inside the allowlist
        os.environ["GDR_NOTE"] = f"PGPASSWORD={SECRET} psql"
        try:
            cmd = ["mpirun", "--oversubscribe", "-np", "2", gdrbench(), "run", "-T", "mpi", "-t", "latency",
                   "-m", "host", "-b", "8", "-e", "8", "-n", "5", "-w", "1", "--json", jsonl, "--output", h5]
            r = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=120)
        finally:
            del os.environ["UCX_PROXY_URL"], os.environ["GDR_NOTE"]
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assert_clean("the table (stdout)", r.stdout)
        self.assert_clean("stderr", r.stderr)
        attrs = []
        with h5py.File(h5, "r") as f:
            f.visititems(lambda n, o: attrs.extend(f"{n}/{k}={v}" for k, v in o.attrs.items()))
            attrs.extend(f"/{k}={v}" for k, v in f.attrs.items())
            cl = f.attrs["command_line"]
        cl = cl.decode() if isinstance(cl, bytes) else cl
        self.assertIn(f"token={MARK}", cl)
        self.assert_clean("HDF5 attributes", "\n".join(map(str, attrs)))
        with open(jsonl, encoding="utf-8") as f:
            text = f.read()
        for line in text.splitlines():
            json.loads(line)  # still JSON after the redaction
        self.assert_clean("JSON Lines", text)
        html = os.path.join(self.tmp, "report.html")
        rr = analysis("report", h5, "--html", html)
        self.assertEqual(rr.returncode, 0, rr.stderr)
        with open(html, encoding="utf-8") as f:
            self.assert_clean("report.html", f.read())
        rj = analysis("stragglers", h5, "--json")
        self.assertEqual(rj.returncode, 0, rj.stderr)
        self.assert_clean("stragglers --json", rj.stdout + rj.stderr)

        hosts, out = os.path.join(self.tmp, "hosts"), os.path.join(self.tmp, "v")
        with open(hosts, "w") as f:
            f.write("localhost slots=8\n")
        la = f"--oversubscribe -x PGPASSWORD={SECRET} -x GDR_DB=mysql://me:{SECRET}@db"
        rv = analysis("validate", "--hostfile", hosts, "--ranks-per-host", "3", "--launcher-args", la,
                      "--budget", "60", "--no-report", "--min-bytes", "8", "--max-bytes", "16", "--out", out,
                      "--gdrbench", gdrbench(), env_extra=mpi_env(), timeout=120)
        self.assertTrue(os.path.exists(os.path.join(out, "validate.json")), rv.stderr[-2000:])
        for name in ("validate.json", "commands.log"):
            with open(os.path.join(out, name), encoding="utf-8") as f:
                text = f.read()
            self.assertIn("PGPASSWORD", text, name)  # the launcher arguments are there, their secret not
            self.assert_clean(name, text)
        with open(os.path.join(out, "validate.xml"), encoding="utf-8") as f:
            self.assert_clean("validate.xml", f.read())
        self.assert_clean("validate's table", rv.stdout + rv.stderr)


if __name__ == "__main__":
    unittest.main()
