"""`gdrbench suspects` on real runs (issue 15): 4 ranks on this machine,
host memory, the rounds and incast patterns. Without a fault: no suspect
(exit 0). With rank SLOW made slow for real (slow_rank.sh: a cgroup CPU
quota, or a busy loop on its core): exit 1, rank SLOW named, and nothing
named that does not involve rank SLOW. The false-positive rate of healthy
runs is measured by tests/analysis/measure_suspects_fp.py, not here."""
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
        full += [os.path.join(HERE, "slow_rank.sh"), GDRBENCH] + RUN_ARGS + ["--output", h5]
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
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--np", type=int, default=4)
    a.add_argument("--slow", type=int, default=2)
    args = a.parse_args()
    main(lambda: main_(args.np, args.slow))
