"""`gdrbench validate` on a real 4-host emulated cluster (jobs/cluster: network
namespaces with their own hostnames, veth on a bridge, links paced by tc at
20 Mbit/s,
real mpirun through the rsh agent). Healthy: exit 0, every host healthy,
the JSON, JUnit and commands files say so, the budget is kept. A slowed
link (fault.sh link, both directions): exit 1, that link named as a link,
no host named as a whole and no other host named; with `--retest auto` the same, the
retests in the same job probing only that link's hosts and clearing no slow link.
Bad input: one line, 2.
Error rates over many runs: jobs/cluster/measure_validate.py."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "jobs", "cluster")
CLUSTER, FAULT, AGENT = (os.path.join(JOBS, f) for f in ("cluster.sh", "fault.sh", "rsh-agent.sh"))
ENV = dict(os.environ, GDR_CLUSTER="gt", GDR_CLUSTER_SUBNET="201", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
HOSTS = ["gt1", "gt2", "gt3", "gt4"]
BUDGET = 40
SIZES = ["--min-bytes", "32K", "--max-bytes", "128K", "--window", "2"]   # links at 20 Mbit/s: 26-105 ms an iteration
LAUNCHER = subprocess.run([CLUSTER, "launcher-args"], capture_output=True, text=True, check=True).stdout.strip()


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def sh(*cmd):
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def validate(gdr, out, *extra, timeout=BUDGET + 60):
    cmd = [CLUSTER, "exec", "gt1", gdr, "validate", "--hostfile", sh(CLUSTER, "hostfile").strip(),
           "--launcher-args", LAUNCHER, "--budget", str(BUDGET), "--out", out, *SIZES, *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)
    print(p.stdout, p.stderr, sep="\n")
    return p, time.monotonic() - t0


def files_agree(out, rc):
    doc = json.load(open(os.path.join(out, "validate.json")))
    check(doc["exit"] == rc, f"validate.json exit {doc['exit']}, process {rc}")
    check([v["host"] for v in doc["verdicts"]] == HOSTS, f"hosts {[v['host'] for v in doc['verdicts']]}")
    suite = ET.parse(os.path.join(out, "validate.xml")).getroot()
    check(suite.get("tests") == "4", f"JUnit tests={suite.get('tests')}")
    bad = {tc.get("name") for tc in suite if len(tc)}
    check(bad == {v["host"] for v in doc["verdicts"] if v["status"] != "healthy"}, f"JUnit failures {bad}")
    log = open(os.path.join(out, "commands.log")).read()
    check("doctor" in log and "--pattern rounds" in log, "commands.log lacks the doctor or the bench")
    check(doc["elapsed_s"] <= BUDGET, f"{doc['elapsed_s']} s over the {BUDGET} s budget")
    return doc


def healthy(gdr, d):
    for args, why in ((["--hostfile", "/nonexistent"], "cannot read"),
                      (["--hostfile", "/dev/null"], "no host"),
                      (["--hostfile", sh(CLUSTER, "hostfile").strip(), "--budget", "5"], "too small")):
        p = subprocess.run([gdr, "validate", *args], env=ENV, capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and why in p.stderr and p.stderr.count("\n") == 1,
              f"{args}: exit {p.returncode}, {p.stderr!r}")
    out = os.path.join(d, "healthy")
    p, took = validate(gdr, out)
    check(p.returncode == 0, f"healthy cluster: exit {p.returncode}")
    doc = files_agree(out, 0)
    check(all(v["status"] == "healthy" for v in doc["verdicts"]) and not doc["findings"], "a host named")
    check(os.path.exists(os.path.join(out, "report.html")), "no report.html")
    print(f"healthy: {took:.1f} s")


def slow_link(gdr, d, pct, retest=False):
    sh(FAULT, "link", "gt2", "gt4", str(pct))
    out = os.path.join(d, "link")
    p, took = validate(gdr, out, "--no-report", *(["--retest", "auto"] if retest else []))
    check(p.returncode == 1, f"link gt2<->gt4 {pct}% slower: exit {p.returncode}")
    doc = files_agree(out, 1)
    links = [f for f in doc["findings"] if f["kind"] == "link"]
    check([sorted(f["hosts"]) for f in links] == [["gt2", "gt4"]], f"links named: {links}")
    check(all(f["kind"] == "link" for f in doc["findings"]), f"whole host named: {doc['findings']}")
    st = {v["host"]: v["status"] for v in doc["verdicts"]}
    check(st == {"gt1": "healthy", "gt2": "suspect", "gt3": "healthy", "gt4": "suspect"}, f"verdicts {st}")
    if retest:  # the second phase ran in the same job, probed only gt2 and gt4, cleared neither link
        check("--retest auto" in open(os.path.join(out, "commands.log")).read(), "run without --retest auto")
        verdicts = (doc["suspects"].get("retest") or {}).get("verdicts") or []
        check(verdicts, f"no retest verdicts: {doc['suspects'].get('retest')}")
        ranks = {int(x) for v in verdicts for x in v["what"].split()[1].split(">")}
        check(ranks <= {1, 3}, f"retested ranks {ranks}, want those of gt2 and gt4: {verdicts}")
        links = [v for v in verdicts if v["what"].startswith("link")]
        check(links and all(v["state"] != "cleared" for v in links), f"a slow link cleared: {verdicts}")
    print(f"slow link{' with retests' if retest else ''}: {took:.1f} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=("healthy", "slow-link", "slow-link-retest"))
    ap.add_argument("--pct", type=float, default=25)
    a = ap.parse_args()
    gdr = os.environ["GDRBENCH"]
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(77)
    subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    sh(CLUSTER, "up", "4", "20")
    try:
        with tempfile.TemporaryDirectory() as d:
            healthy(gdr, d) if a.case == "healthy" else slow_link(gdr, d, a.pct, a.case.endswith("retest"))
    finally:
        subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    print("PASS")


if __name__ == "__main__":
    main()
