#!/usr/bin/env python3
"""Runs `gdrbench doctor ...` and checks its exit status and output.

usage: check_doctor.py [--expect-exit N] [--expect-status AREA/NAME=STATUS]...
                       [--reports N] [--table] -- COMMAND...

With --table the human table is checked, otherwise stdout must be exactly one
JSON document of schema gdrbench-doctor version 1 (src/doctor/README.md),
internally consistent (verdicts follow from statuses, exit codes from
verdicts, one report per host). Exits non-zero, saying why, on any mismatch.
"""
import argparse
import json
import re
import subprocess
import sys

VERDICT_EXIT = {"ready": 0, "degraded": 3, "not ready": 4}
STATUSES = {"pass", "warn", "fail", "n/a"}


def fail(msg, out=""):
    print("FAIL:", msg)
    if out:
        print("---- output ----")
        print(out)
    sys.exit(1)


def verdict_of(checks):
    statuses = {c["status"] for c in checks}
    if "fail" in statuses:
        return "not ready"
    return "degraded" if "warn" in statuses else "ready"


def check_json(doc, args, out):
    if doc.get("schema") != "gdrbench-doctor" or doc.get("version") != 1:
        fail("not a gdrbench-doctor v1 document", out)
    reports = doc.get("reports")
    if not isinstance(reports, list) or not reports:
        fail("no reports", out)
    if args.reports is not None and len(reports) != args.reports:
        fail(f"{len(reports)} reports, expected {args.reports}", out)
    hosts = [r["host"] for r in reports]
    if len(set(hosts)) != len(hosts):
        fail(f"a host reported twice: {hosts}", out)
    worst = 0
    for r in reports:
        for c in r["checks"]:
            for key in ("area", "name", "status", "evidence", "fix"):
                if not isinstance(c.get(key), str):
                    fail(f"{r['host']}: check without string '{key}': {c}", out)
            if c["status"] not in STATUSES:
                fail(f"{r['host']}: bad status {c['status']!r}", out)
            if c["status"] in ("warn", "fail") and not c["fix"]:
                fail(f"{r['host']}: {c['area']}/{c['name']} is {c['status']} without a fix", out)
        if r["verdict"] != verdict_of(r["checks"]):
            fail(f"{r['host']}: verdict {r['verdict']!r} does not follow from its checks", out)
        if r["exit_code"] != VERDICT_EXIT[r["verdict"]]:
            fail(f"{r['host']}: exit_code {r['exit_code']} for verdict {r['verdict']!r}", out)
        if not isinstance(r.get("differs_from_majority"), list):
            fail(f"{r['host']}: differs_from_majority missing", out)
        worst = max(worst, r["exit_code"])
        for want in args.expect_status:
            key, status = want.split("=", 1)
            got = [c["status"] for c in r["checks"] if f"{c['area']}/{c['name']}" == key]
            if got != [status]:
                fail(f"{r['host']}: {key} is {got}, expected {status}", out)
    if doc["exit_code"] != worst:
        fail(f"document exit_code {doc['exit_code']}, worst report {worst}", out)


def check_table(out, args):
    first = out.splitlines()[0] if out else ""
    if not first.startswith("gdrbench doctor:"):
        fail("table does not start with 'gdrbench doctor:'", out)
    if args.expect_exit is not None:
        m = re.search(r"\(exit (\d+)\)", first)
        if not m or int(m.group(1)) != args.expect_exit:
            fail(f"first line does not say exit {args.expect_exit}", out)
    for want in args.expect_status:
        key, status = want.split("=", 1)
        area, name = key.split("/", 1)
        row = re.compile(rf"^\s+{re.escape(area)}\s+{re.escape(name)}\s+{re.escape(status)}\s", re.M)
        if not row.search(out):
            fail(f"no row '{area} {name} {status}'", out)


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_doctor.py [options] -- COMMAND...")
    split = argv.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("--expect-exit", type=int)
    p.add_argument("--expect-status", action="append", default=[])
    p.add_argument("--reports", type=int)
    p.add_argument("--table", action="store_true")
    args = p.parse_args(argv[:split])
    cmd = argv[split + 1:]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=170)
    out = proc.stdout
    both = out + ("\n---- stderr ----\n" + proc.stderr if proc.stderr else "")
    if args.expect_exit is not None and proc.returncode != args.expect_exit:
        fail(f"exit status {proc.returncode}, expected {args.expect_exit}", both)
    if args.table:
        check_table(out, args)
    else:
        try:
            doc = json.loads(out)
        except json.JSONDecodeError as e:
            fail(f"stdout is not one JSON document: {e}", both)
        check_json(doc, args, both)
        if args.expect_exit is not None and doc["exit_code"] != args.expect_exit:
            fail(f"document exit_code {doc['exit_code']}, expected {args.expect_exit}", both)
    print(f"ok: exit {proc.returncode}")


if __name__ == "__main__":
    main()
