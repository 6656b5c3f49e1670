"""One trial of a live verdict on the emulated cluster (jobs/cluster): a
`--pattern rounds` run over the cluster's hosts (4 unless told); after its `onset_after`-th case row the
link A<->B is slowed (fault.sh link, both directions); the seconds from that
onset to the run's `# live suspect:` line naming it. Used by
tests/cluster/test_live_verdicts.py and measure_live_delay.py. Needs the
cluster up (cluster.sh up HOSTS) and root; every wait is bounded."""

import json
import os
import queue
import re
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER, FAULT = os.path.join(HERE, "cluster.sh"), os.path.join(HERE, "fault.sh")
LIVE = re.compile(r"^# live suspect: host link (\S+)>(\S+) ")
ROW = re.compile(r"^\s+\d+\s+\d+\s+byte\s")   # a case row of the table


def _sh(env, *cmd):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True).stdout.strip()


def _reader(stream, q):
    for line in stream:
        q.put((time.monotonic(), line))
    q.put((time.monotonic(), None))


def trial(gdr, env, workdir, a, b, pct, onset_after=1, sizes=("32K", "128K"), case_time=0.2, limit_s=90, hosts=4):
    """pct None: no fault (a healthy run). Returns a dict: onset (monotonic s or None), named [(host, host, seconds after onset)],
    rc, stdout, the --output and --json paths. The fault is cleared before it returns."""
    h5, js = os.path.join(workdir, "live.h5"), os.path.join(workdir, "live.jsonl")
    hostfile = _sh(env, CLUSTER, "hostfile")
    launcher = _sh(env, CLUSTER, "launcher-args").split()
    first = open(hostfile).read().split()[0]
    cmd = [CLUSTER, "exec", first, "mpirun", "--hostfile", hostfile, "-np", str(hosts), *launcher, gdr, "run", "-t", "bw",
           "-T", "mpi", "-m", "host", "-b", sizes[0], "-e", sizes[1], "--window", "2", "--pattern", "rounds", "-w", "1",
           "--case-time", str(case_time), "--timeout", "15", "--output", h5, "--json", js, "--force"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    q = queue.Queue()
    threading.Thread(target=_reader, args=(p.stdout, q), daemon=True).start()
    deadline, rows, onset, named, out = time.monotonic() + limit_s, 0, None, [], []
    try:
        while True:
            try:
                t, line = q.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None or time.monotonic() > deadline:
                break
            out.append(line)
            if ROW.match(line):
                rows += 1
                if rows == onset_after and onset is None and pct is not None:
                    _sh(env, FAULT, "link", a, b, str(pct))
                    onset = time.monotonic()
            m = LIVE.match(line)
            if m:
                named.append((m.group(1), m.group(2), None if onset is None else round(t - onset, 2)))
        if p.poll() is None:
            os.killpg(p.pid, 9)   # our own mpirun's session, past its deadline
        rc = p.wait(timeout=30)
    finally:
        subprocess.run([FAULT, "clear"], env=env, capture_output=True, timeout=60)
    return {"onset": onset, "named": named, "rc": rc, "stdout": "".join(out), "h5": h5, "jsonl": js}


def live_records(jsonl):
    with open(jsonl) as f:
        return [r for r in (json.loads(x) for x in f if x.strip()) if r.get("record") == "live_suspect"]


def suspects_hostlinks(gdr, h5, env):
    """The host links `gdrbench suspects` names in the finished file, with the live rule's thresholds
    (validate's: --min-slowdown 7, --p0 0.01)."""
    p = subprocess.run([gdr, "suspects", h5, "--min-slowdown", "7", "--p0", "0.01", "--json"], env=env,
                       capture_output=True, text=True, timeout=120)
    rep = json.loads(p.stdout)
    return {tuple(s["what"].split(">")) for s in rep["suspects"] if s["kind"] == "hostlink"}
