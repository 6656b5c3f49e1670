"""`gdrbench validate` on a real 4-host emulated cluster (jobs/cluster: network
namespaces with their own hostnames, veth on a bridge, links paced by tc at
20 Mbit/s,
real mpirun through the rsh agent). Healthy: exit 0, every host healthy,
the JSON, JUnit and commands files say so, the budget is kept. A slowed
link (fault.sh link, both directions): exit 1, that link named as a link,
no host named as a whole and no other host named; with `--retest auto` the same, the
retests in the same job probing only that link's hosts and clearing no slow link.
Faults nobody chose (the targets of the fleet verdicts): one host's NIC
flapping (fault.sh flap: 40 % slower half of every 4 s), one host dropping 1.5 %
of what it sends (fault.sh loss), and every NIC 60 % slower for a
window mid-run (fault.sh stall): validate names exactly the bad host, with the
right class where its findings carry one, and no host for the stall.
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
LONG_BUDGET = 60   # the flap and the loss: seconds of a run that sees enough of them at 4 hosts
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


def validate(gdr, out, *extra, budget=BUDGET):
    cmd = [CLUSTER, "exec", "gt1", gdr, "validate", "--hostfile", sh(CLUSTER, "hostfile").strip(),
           "--launcher-args", LAUNCHER, "--budget", str(budget), "--out", out, *SIZES, *extra]
    timeout = budget + 60
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)
    print(p.stdout, p.stderr, sep="\n")
    return p, time.monotonic() - t0


def files_agree(out, rc, budget=BUDGET):
    doc = json.load(open(os.path.join(out, "validate.json")))
    check(doc["exit"] == rc, f"validate.json exit {doc['exit']}, process {rc}")
    check([v["host"] for v in doc["verdicts"]] == HOSTS, f"hosts {[v['host'] for v in doc['verdicts']]}")
    suite = ET.parse(os.path.join(out, "validate.xml")).getroot()
    check(suite.get("tests") == "4", f"JUnit tests={suite.get('tests')}")
    bad = {tc.get("name") for tc in suite if len(tc)}
    check(bad == {v["host"] for v in doc["verdicts"] if v["status"] != "healthy"}, f"JUnit failures {bad}")
    log = open(os.path.join(out, "commands.log")).read()
    check("doctor" in log and "--pattern rounds" in log, "commands.log lacks the doctor or the bench")
    check(doc["elapsed_s"] <= budget, f"{doc['elapsed_s']} s over the {budget} s budget")
    return doc


def healthy(gdr, d):
    for args, why in ((["--hostfile", "/nonexistent"], "cannot read"),
                      (["--hostfile", "/dev/null"], "is a device, not a regular file"),
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


def only_host_named(doc, bad, cls_words, what):
    """Exactly `bad` named (suspect or failed), every other host healthy; where a finding carries a
    class (cls), the bad host's is one of cls_words."""
    st = {v["host"]: v["status"] for v in doc["verdicts"]}
    want = {h: ("suspect" if h == bad else "healthy") for h in HOSTS}
    check(st == want, f"{what}: verdicts {st}, want only {bad} named")
    classes = {f.get("cls") for f in doc["findings"] if f.get("cls") and bad in f["hosts"]}
    check(all(c in cls_words for c in classes), f"{what}: {bad}'s class {classes}, want one of {cls_words}")
    check(all(bad in f["hosts"] for f in doc["findings"]), f"{what}: a finding without {bad}: {doc['findings']}")
    print(f"{what}: {bad} named alone; class {sorted(classes) or 'not given'}")


def intermittent(gdr, d):
    """One NIC flapping both ways: 40 % slower for half of every 4 s, for the whole run. The run
    gets 60 s, not 40: at 40 s the slow phases fell mostly on one partner's steps in 1 of 3 runs,
    and the model read a slow link to that healthy partner (at 4 hosts, 3 partners a host)."""
    print(sh(FAULT, "flap", "gt3", "40", "4", "50", str(LONG_BUDGET + 60), "both").strip())
    out = os.path.join(d, "flap")
    p, took = validate(gdr, out, "--no-report", budget=LONG_BUDGET)
    log = open(f"/run/gdrcluster/{ENV['GDR_CLUSTER']}/jobs/flap-gt3.log").read().split()
    sh(FAULT, "clear")
    check(log.count("slow") >= 3, f"the NIC flapped {log.count('slow')} times")
    check(p.returncode == 1, f"gt3 flapping: exit {p.returncode}")
    only_host_named(files_agree(out, 1, LONG_BUDGET), "gt3", ("intermittent",), "flapping NIC")
    print(f"intermittent: {took:.1f} s, {log.count('slow')} slow phases")


def loss(gdr, d):
    """One host drops 1.5 % of what it sends (nftables; the rules' counters say how many): the low
    end of the loss the fleet targets ask for, one direction, which TCP resends within a round trip
    and the timings hardly see. validate names it by TCP's own counts (its resends beyond its
    peers'), or by its tail, with the send side."""
    print(sh(FAULT, "loss", "gt3", "1.5", "egress").strip())
    out = os.path.join(d, "loss")
    p, took = validate(gdr, out, "--no-report")
    counts = sh(FAULT, "counters", "gt3")
    print(counts)
    sh(FAULT, "clear")
    rates = [float(x.split("(")[1].split()[0]) for x in counts.splitlines()]
    check(len(rates) == 1 and 0.8 < rates[0] < 2.2, f"drop rates {rates} %, asked 1.5 %")
    check(p.returncode == 1, f"gt3 losing 1.5 % of what it sends: exit {p.returncode}")
    doc = files_agree(out, 1)
    only_host_named(doc, "gt3", ("lossy (TCP counts)", "lossy tail"), "lossy host")
    sides = {f.get("side") for f in doc["findings"] if "gt3" in f["hosts"]}
    check(sides <= {"send side", "both sides"}, f"lossy host's side {sides}, want the send side")
    print(f"loss: {took:.1f} s")


def stall(gdr, d):
    """Every host's NIC 60 % slower for 5 s from 9 s after the start: the bench runs from about
    4 s to 22 s of the 24 s a 4-host validate takes. No host is bad."""
    print(sh(FAULT, "stall", "60", "9", "5").strip())
    out = os.path.join(d, "stall")
    t0 = time.time()
    p, took = validate(gdr, out, "--no-report")
    log = open(f"/run/gdrcluster/{ENV['GDR_CLUSTER']}/jobs/stall.log").read().splitlines()
    sh(FAULT, "clear")
    at = {ln.split()[1]: float(ln.split()[0]) - t0 for ln in log if len(ln.split()) > 1}
    check("slow" in at and "full" in at and at["full"] < took, f"the stall did not lie inside the run: {log}")
    doc = files_agree(out, p.returncode)
    st = {v["host"]: v["status"] for v in doc["verdicts"]}
    check(p.returncode == 0 and all(s == "healthy" for s in st.values()),
          f"machine-wide stall: exit {p.returncode}, verdicts {st}, findings {doc['findings']}")
    stalls = [n for n in doc["notes"] if "step" in n.lower() or "stall" in n.lower()]
    print(f"stall: {took:.1f} s, stall from {at['slow']:.1f} s to {at['full']:.1f} s; no host named; "
          f"notes on it: {stalls or 'none'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=("healthy", "slow-link", "slow-link-retest", "intermittent", "loss", "stall"))
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
            if a.case in ("intermittent", "loss", "stall"):
                {"intermittent": intermittent, "loss": loss, "stall": stall}[a.case](gdr, d)
            else:
                healthy(gdr, d) if a.case == "healthy" else slow_link(gdr, d, a.pct, a.case.endswith("retest"))
    finally:
        subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    print("PASS")


if __name__ == "__main__":
    main()
