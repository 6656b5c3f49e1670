"""`gdrbench suspects` on real runs: 4 ranks on this machine,
host memory, the rounds and incast patterns. Without a fault: no suspect
(exit 0). With rank SLOW made slow for real (slow_rank.sh: a cgroup CPU
quota, or a busy loop on its core): exit 1, rank SLOW named, and nothing
named that does not involve rank SLOW. The false-positive rate of healthy
runs is measured by `tests/analysis/measure_false_positives.py suspects`, not here.

The retests (src/planning/retest.h, --retest auto with rounds): on the healthy run
suspects' recomputation from the file agrees with the run's own retest
verdicts (the CPU-quota run has them off); and a
bw rounds run in which rank SLOW sleeps 100 ms in each window
(GDR_SELFTEST_SLOW_RANK: here a CPU quota on one rank also slows the other
flows of its steps, healthy links 0.1-1.7x, a slowed end 2-7x at z < 5)
convicts rank SLOW's sending and receiving by the retest and nothing else."""
import argparse
import json
import os
import shutil
import signal
import subprocess

from gdrtest import *  # noqa: F401,F403

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_ARGS = ["run", "-t", "latency,bw", "-T", "mpi", "-b", "64K", "-e", "256K", "-f", "4", "-n", "10", "-w", "1",
            "--window", "16", "--pattern", "rounds,incast", "--timeout", "120"]


def bench(np_, h5, slow=None):
    d = os.path.dirname(h5)
    extra = {}
    cmd = ["run"]
    name = f"gdrbench-slow-{os.getpid()}"
    pidfile = os.path.join(d, "busy.pid")
    if slow is not None:
        extra = {"GDR_SLOW_RANK": str(slow), "GDR_SLOW_CGROUP": name, "GDR_SLOW_PIDFILE": pidfile}
    try:
        full = ["mpirun", "-q", "--oversubscribe", "-np", str(np_)]
        for k, v in extra.items():
            full += ["-x", f"{k}={v}"]
        # The CPU-quota run's retests are off: ~15 s more under a throttled rank, and not a clean slow end
        # (results/archive/20261205_fleet-scale-measurement-log.txt); the healthy run keeps them, retest_() below tests them.
        retest = ["--retest", "off"] if slow is not None else ["--retest", "auto"]
        full += [os.path.join(HERE, "slow_rank.sh"), GDRBENCH] + RUN_ARGS + retest + ["--output", h5]
        e = env()
        e.update(extra)
        p = subprocess.run(full, capture_output=True, text=True, timeout=600, env=e)
    finally:
        if os.path.exists(pidfile):
            os.kill(int(open(pidfile).read()), signal.SIGKILL)
        for cg in (f"/sys/fs/cgroup/cpu/{name}", f"/sys/fs/cgroup/{name}"):
            if os.path.isdir(cg):
                os.rmdir(cg)
    check(p.returncode == 0, f"gdrbench exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def suspects(h5):
    p = subprocess.run([GDRBENCH, "suspects", h5, "--json"], capture_output=True, text=True, timeout=300)
    check(p.returncode in (0, 1), f"suspects exit {p.returncode}\n{p.stderr}")
    rep = json.loads(p.stdout)
    check((p.returncode == 1) == bool(rep["suspects"]), "exit status disagrees with the suspects")
    return p.returncode, rep


def main_(np_, slow):
    d = tmpdir()
    healthy = os.path.join(d, "healthy.h5")
    bench(np_, healthy)
    rc, rep = suspects(healthy)
    check(rc == 0, f"a healthy run has suspects: {rep['suspects']}")
    faulty = os.path.join(d, "slow.h5")
    p = bench(np_, faulty, slow)
    rc, rep = suspects(faulty)
    txt = subprocess.run([GDRBENCH, "suspects", faulty], capture_output=True, text=True).stdout
    print(txt)
    check(rc == 1, f"rank {slow} made slow ({p.stderr.strip()[:200]}) but no suspect")
    named = {s["what"] for s in rep["suspects"] if s["kind"] == "rank"}
    check(named == {f"rank {slow}"}, f"ranks named: {named}, want only rank {slow}")
    for s in rep["suspects"]:
        if s["kind"] == "link":
            ends = {int(x) for x in s["what"].split(">")}
            check(slow in ends, f"link {s['what']} named, which does not involve rank {slow}")
    for r in (suspects(healthy)[1], rep):  # the run's retest verdicts, recomputed from the file
        check(r["retest"] is None or r["retest"]["problems"] == [], f"retest recomputation: {r['retest']}")
    retest_(np_, slow, d)
    shutil.rmtree(d, ignore_errors=True)


def retest_(np_, slow, d):
    h5, jl = os.path.join(d, "retest.h5"), os.path.join(d, "retest.jsonl")
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np_), "-x", f"GDR_SELFTEST_SLOW_RANK={slow}",
           "-x", "GDR_SELFTEST_SLOW_US=100000", GDRBENCH, "run", "-t", "bw", "-T", "mpi", "-b", "256K", "-e", "256K",
           "-n", "5", "-w", "1", "--window", "16", "--pattern", "rounds", "--retest", "auto", "--timeout", "60", "--output", h5,
           "--json", jl, "--live-min-slowdown", "200"]  # 3x: healthy sends read up to 1.9x here at load 6
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env())
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    said = [l for l in p.stdout.splitlines() if "retest: rank" in l and "CONVICTED" in l]
    check(said and all(f"rank {slow} " in l for l in said), f"printed convictions: {said}\n{p.stdout[-3000:]}")
    rc, rep = suspects(h5)
    rt = rep["retest"]
    check(rt and rt["problems"] == [], f"recomputed from the file: {rt}")
    convicted = {v["what"] for v in rt["verdicts"] if v["state"] == "convicted"}
    check(convicted and all(w.startswith(f"rank {slow} ") for w in convicted), f"convicted: {convicted}")
    others = {v["what"]: v["state"] for v in rt["verdicts"] if f"rank {slow} " not in v["what"] + " "}
    check("convicted" not in others.values(), f"healthy parts convicted: {others}")
    records = [json.loads(l) for l in open(jl) if '"retest_verdict"' in l]
    check({r["what"] for r in records if r["state"] == "convicted"} == convicted, f"JSON Lines: {records}")
    steps = [json.loads(l) for l in open(jl) if '"pattern":"retest"' in l.replace(" ", "")]
    check(0 < len(steps) <= 4 * 3 and all(s["retest_round"] >= 1 for s in steps), f"{len(steps)} retest steps")
    print(f"retest: convicted {sorted(convicted)}, others {others}, {len(steps)} steps")
    for bad in (["--retest", "maybe"], ["--retest-rounds", "0"]):
        q = subprocess.run([GDRBENCH, "run", "-t", "bw"] + bad, capture_output=True, text=True, timeout=30)
        lines = [l for l in q.stderr.splitlines() if l.strip()]
        check(q.returncode == 2 and len(lines) == 1 and bad[0] in lines[0], f"{bad}: exit {q.returncode} {q.stderr}")


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, default=4)
    a.add_argument("--slow", type=int, default=2)
    args = a.parse_args()
    main(lambda: main_(args.np, args.slow))
