"""Live verdicts on a real 4-host emulated cluster (jobs/cluster): a
`--pattern rounds` run; after its first case row one link is slowed 25 %
(fault.sh link, both directions, applied mid-run). The run must name that
link on a `# live suspect:` line within 30 s of the onset, while it still
runs, append the same verdict to its JSON Lines file (record live_suspect),
and `gdrbench suspects` must name every live-named direction of it in the
finished file. A bad --live-verdicts value: one line, exit 2 (the rule
itself, off included: tests/unit/test_live_verdicts.cpp). Delays over many trials: jobs/cluster/measure_live_delay.py."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "jobs", "cluster")
sys.path.insert(0, JOBS)
import live_trial  # noqa: E402

CLUSTER = os.path.join(JOBS, "cluster.sh")
ENV = dict(os.environ, GDR_CLUSTER="gt", GDR_CLUSTER_SUBNET="201", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
SLOW = ("gt2", "gt4")
LIMIT_S = 30.0


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def bad_input(gdr):
    p = subprocess.run([gdr, "run", "--live-verdicts", "maybe"], env=ENV, capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "--live-verdicts" in p.stderr and p.stderr.count("\n") == 1,
          f"--live-verdicts maybe: exit {p.returncode}, {p.stderr!r}")


def main():
    gdr = os.environ["GDRBENCH"]
    bad_input(gdr)
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(77)
    subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    subprocess.run([CLUSTER, "up", "4", "20"], env=ENV, capture_output=True, timeout=60, check=True)
    try:
        with tempfile.TemporaryDirectory() as d:
            r = live_trial.trial(gdr, ENV, d, *SLOW, 25)
            print(r["stdout"][-3000:])
            check(r["rc"] == 0 and r["onset"] is not None, f"run exit {r['rc']}, onset {r['onset']}")
            ours = [n for n in r["named"] if set(n[:2]) == set(SLOW)]
            check(ours, f"{SLOW[0]}<->{SLOW[1]} not named live; named: {r['named']}")
            delay = ours[0][2]
            check(delay is not None and 0 <= delay <= LIMIT_S, f"named {delay} s after the onset (limit {LIMIT_S})")
            recs = live_trial.live_records(r["jsonl"])
            check({tuple(x["what"].split(">")) for x in recs} == {n[:2] for n in r["named"]},
                  f"JSON Lines records {recs} vs lines {r['named']}")
            after = live_trial.suspects_hostlinks(gdr, r["h5"], ENV)
            for n in ours:
                check(n[:2] in after, f"live named {n[0]}>{n[1]}, suspects did not: {sorted(after)}")
            others = [n for n in r["named"] if n not in ours]
            print(f"named {SLOW[0]}<->{SLOW[1]} {delay} s after the onset; suspects agrees; other live names: {others}")
    finally:
        subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    print("PASS")


if __name__ == "__main__":
    main()
