#!/usr/bin/env python3
"""Checks `gdrbench suspects` on a two-node Soft-RoCE run (2 ranks per node).

  check_suspects.py GDRBENCH FILE --hca rxe0:1 (--healthy | --slow-direction node2>node1)

Reads the file back through gdranalysis (the reader `report` and `suspects`
use): every rank's /ranks/hca must be --hca and its /ranks/gpu empty (host
memory), ranks 0,1 on node1 and 2,3 on node2. Then runs GDRBENCH suspects
FILE --json. --healthy: exit 0, no suspect. --slow-direction A>B (tc netem
rate on A's eth0 egress): exit 1 and exactly one suspect, the host link
A>B, whose links are every rank of A to every rank of B; no rank, no rank
link (intra-node or the other direction) named, no host named alone (with
two hosts, A's sending side and B's receiving side cannot be told apart; the
table says so, naming both). Exit 1 with one line per problem.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results"))
from gdranalysis.schema import load_run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gdrbench")
    ap.add_argument("file")
    ap.add_argument("--hca", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--healthy", action="store_true")
    g.add_argument("--slow-direction", metavar="A>B")
    a = ap.parse_args()
    problems = []
    run = load_run(a.file)
    hosts = ["node1", "node1", "node2", "node2"]
    if run.hosts != hosts:
        problems.append(f"/ranks/host is {run.hosts}, expected {hosts}")
    if run.hcas != [a.hca] * 4:
        problems.append(f"/ranks/hca is {run.hcas}, expected {a.hca} for each of 4 ranks")
    if run.gpus != [""] * 4:
        problems.append(f"/ranks/gpu is {run.gpus}, expected empty (host memory) for each of 4 ranks")
    r = subprocess.run([a.gdrbench, "suspects", a.file, "--json"], capture_output=True, text=True)
    table = subprocess.run([a.gdrbench, "suspects", a.file], capture_output=True, text=True).stdout
    print(table)
    want_rc = 0 if a.healthy else 1
    if r.returncode != want_rc:
        problems.append(f"suspects exited {r.returncode}, expected {want_rc}: {r.stderr.strip()}")
    rep = json.loads(r.stdout) if r.stdout.strip() else {"suspects": [], "hosts": []}
    named = sorted((s["kind"], s["what"]) for s in rep["suspects"])
    if a.healthy:
        if named:
            problems.append(f"a healthy run named {named}")
    else:
        src, dst = a.slow_direction.split(">")
        if named != [("hostlink", a.slow_direction)]:
            problems.append(f"suspects named {named}, expected only the host link {a.slow_direction}")
        want = {f"{s}>{d}" for s in range(4) for d in range(4) if hosts[s] == src and hosts[d] == dst}
        for s in rep["suspects"]:
            if s["kind"] == "hostlink" and set(s["links"]) != want:
                problems.append(f"host link {s['what']} lists links {s['links']}, expected {sorted(want)}")
        if rep["hosts"]:
            problems.append(f"suspects named host(s) {rep['hosts']} alone; two hosts cannot say which end")
        line = f"{src}'s sending side or {dst}'s receiving side"
        if line not in table:
            problems.append(f"the table does not say '{line}'")
    for p in problems:
        print(f"check_suspects: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
