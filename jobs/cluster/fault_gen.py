#!/usr/bin/env python3
"""Faults drawn by seed for the emulated cluster (fault.sh), so that validate is
measured on faults nobody chose. Prints one fault as JSON: the ground truth
(which hosts are bad, the class, the direction) and the fault.sh commands that
make it; `--apply` runs them. Plain python3, no packages.

  jobs/cluster/fault_gen.py --hosts 4 [--class loss] [--seed S] [--run-s 24] [--apply]

--hosts: N (hosts <GDR_CLUSTER>1..N) or a comma list. The first host is the
login node (mpirun and validate run there) and is never made bad. --seed: drawn
from os.urandom when not given, and printed: seeds are drawn, not picked.
--run-s: how long the run lasts (validate's wall time, about 24 s at 4 hosts
with --budget 40); onsets and stall windows are drawn as shares of it, seconds
from the moment the fault is applied.

Classes and their ranges (each value uniform in its range):

| class | hosts | what | ranges |
| --- | --- | --- | --- |
| steady | 1 | NIC slower (fault.sh nic) from the start | 10-40 %, direction egress, ingress or both |
| late | 1 | the same, from an onset into the run (fault.sh at ONSET nic) | 10-40 %, onset 0.25-0.6 x run-s |
| intermittent | 1 | NIC flapping (fault.sh flap) | depth 30-60 %, period 1-4 s, duty 30-70 %, direction as steady, lasting 3 x run-s + 30 s |
| loss | 1 | packets dropped (fault.sh loss) | 1-5 %, direction as steady |
| config | 1 | MTU below its peers' 1500 (fault.sh mtu) | 1000-1400 bytes, by 100 |
| stall | none | every NIC, both ways, slower for a window (fault.sh stall) | 30-80 %, onset 0.25-0.5 x run-s, 0.12-0.25 x run-s long |
| combo | 1-2 | two of steady, intermittent, loss, config and stall, on different hosts | as each |

Directions: egress is the host's send side, ingress its receive side. A stall
makes no host bad. JSON: {"seed", "class", "hosts", "bad_hosts", "faults":
[{"class", "host", "direction", ...}], "commands": [[fault.sh arguments], ...]}.
Bad input: one line, exit 2; a fault fault.sh cannot make here (no `mtu`): exit 3.
"""

import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAULT = os.path.join(HERE, "fault.sh")
CLASSES = ("steady", "late", "intermittent", "loss", "config", "stall", "combo")
DIRECTIONS = ("egress", "ingress", "both")
SIDE = {"egress": "send", "ingress": "receive", "both": "both"}


def r1(x, nd=1):
    return round(x, nd)


def draw_one(cls, host, rng, run_s):
    """One fault of class cls on host (None for a stall): (fault record, fault.sh commands)."""
    if cls in ("steady", "late"):
        d, pct = rng.choice(DIRECTIONS), r1(rng.uniform(10, 40))
        onset = 0.0 if cls == "steady" else r1(rng.uniform(0.25, 0.6) * run_s)
        cmd = ["nic", host, d, str(pct)]
        return ({"class": cls, "host": host, "direction": d, "side": SIDE[d], "pct": pct, "onset_s": onset,
                 "duration_s": None}, [["at", str(onset), *cmd]] if onset else [cmd])
    if cls == "intermittent":
        d, depth = rng.choice(DIRECTIONS), r1(rng.uniform(30, 60))
        period, duty = r1(rng.uniform(1, 4), 2), r1(rng.uniform(30, 70))
        dur = r1(3 * run_s + 30)
        return ({"class": cls, "host": host, "direction": d, "side": SIDE[d], "pct": depth, "period_s": period,
                 "duty_pct": duty, "onset_s": 0.0, "duration_s": dur},
                [["flap", host, str(depth), str(period), str(duty), str(dur), d]])
    if cls == "loss":
        d, pct = rng.choice(DIRECTIONS), r1(rng.uniform(1, 5), 2)
        return ({"class": cls, "host": host, "direction": d, "side": SIDE[d], "pct": pct, "onset_s": 0.0,
                 "duration_s": None}, [["loss", host, str(pct), d]])
    if cls == "config":
        mtu = rng.randrange(1000, 1401, 100)
        return ({"class": cls, "host": host, "direction": "both", "side": "both", "mtu": mtu, "onset_s": 0.0,
                 "duration_s": None}, [["mtu", host, str(mtu)]])
    if cls == "stall":
        pct = r1(rng.uniform(30, 80))
        onset, dur = r1(rng.uniform(0.25, 0.5) * run_s), r1(rng.uniform(0.12, 0.25) * run_s)
        return ({"class": cls, "host": None, "direction": "both", "side": "both", "pct": pct, "onset_s": onset,
                 "duration_s": dur}, [["stall", str(pct), str(onset), str(dur)]])
    raise ValueError(cls)


def draw(seed, hosts, cls=None, run_s=24.0):
    """The fault of this seed: the same seed, hosts, class and run-s give the same fault."""
    rng = random.Random(seed)
    cls = cls or rng.choice(CLASSES)
    parts = [cls]
    if cls == "combo":
        parts = rng.sample(("steady", "intermittent", "loss", "config", "stall"), 2)
    per_host = [p for p in parts if p != "stall"]
    targets = rng.sample(hosts[1:], len(per_host)) if per_host else []
    faults, commands = [], []
    it = iter(targets)
    for p in parts:
        f, c = draw_one(p, None if p == "stall" else next(it), rng, run_s)
        faults.append(f)
        commands += c
    return {"seed": seed, "class": cls, "parts": parts, "hosts": hosts, "run_s": run_s,
            "bad_hosts": sorted(targets, key=hosts.index), "faults": faults, "commands": commands}


def can_mtu():
    """Whether the fault.sh beside this file makes `mtu` (an older checkout does not)."""
    return any(line.lstrip().startswith("mtu)") for line in open(FAULT, encoding="utf-8"))


class CannotApply(RuntimeError):
    """fault.sh could not make the fault here."""


def apply(fault, env=None):
    """Run the fault's commands through fault.sh; their output lines. CannotApply when one fails."""
    if any("mtu" in c for c in fault["commands"]) and not can_mtu():
        raise CannotApply("fault.sh has no `mtu` here: a config fault cannot be made")
    out = []
    for c in fault["commands"]:
        p = subprocess.run([FAULT, *c], capture_output=True, text=True, timeout=60, env=env)
        if p.returncode != 0:
            raise CannotApply(f"fault.sh {' '.join(c)}: exit {p.returncode}: {p.stderr.strip()}")
        out.append(p.stdout.strip())
    return out


def host_list(spec):
    name = os.environ.get("GDR_CLUSTER", "gc")
    if spec.isdigit():
        n = int(spec)
        if not 2 <= n <= 200:
            raise ValueError(f"--hosts {spec}: 2-200")
        return [f"{name}{i}" for i in range(1, n + 1)]
    hosts = [h for h in spec.split(",") if h]
    if len(hosts) < 2 or len(set(hosts)) != len(hosts):
        raise ValueError(f"--hosts '{spec}': at least two different hosts")
    return hosts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", required=True, help="N (hosts <GDR_CLUSTER>1..N) or a comma list; the first is the login")
    ap.add_argument("--class", dest="cls", choices=CLASSES, help="default: drawn")
    ap.add_argument("--seed", help="an integer; default drawn from os.urandom (and printed)")
    ap.add_argument("--run-s", type=float, default=24.0, help="the run's length, seconds (onsets and stall windows)")
    ap.add_argument("--apply", action="store_true", help="make the fault through fault.sh")
    try:
        a = ap.parse_args()
        hosts = host_list(a.hosts)
        if a.seed is not None and not a.seed.isdigit():
            raise ValueError(f"--seed '{a.seed}': a whole number")
        if not 1 <= a.run_s <= 3600:
            raise ValueError(f"--run-s {a.run_s}: 1-3600 seconds")
        need = 3 if a.cls == "combo" else 2
        if a.cls != "stall" and len(hosts) < need:
            raise ValueError(f"--class {a.cls}: needs {need} hosts or more (the first is the login)")
    except ValueError as e:
        print(f"fault_gen.py: {e}", file=sys.stderr)
        return 2
    seed = int(a.seed) if a.seed is not None else int.from_bytes(os.urandom(8), "big")
    fault = draw(seed, hosts, a.cls, a.run_s)
    if a.apply:
        try:
            fault["applied"] = apply(fault)
        except CannotApply as e:
            print(f"fault_gen.py: {e}", file=sys.stderr)
            return 3
    print(json.dumps(fault))
    return 0


if __name__ == "__main__":
    sys.exit(main())
