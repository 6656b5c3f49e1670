"""The fault primitives of jobs/cluster/fault.sh that run in time or drop packets, on a real 3-host
emulated cluster (network namespaces, tc htb, nftables): `loss` drops about the share asked (its
rule counters, real UDP through the host's eth0) and every packet at 100 %, `flap` is slow for
its duty of every period and ends at the old rate, `stall` slows every NIC for its window and
gives each its own rate back (a steady fault beside it survives), `at` fires at its onset and
`clear` stops it before, `clear` ends a running flap and removes the loss rules, and
fault_gen.py's draws apply. Bad input: one line, exit 2; and 60 commands drawn by seed from
each argument's good values, edges and wrong forms exit 0 or 2 with one line, each accepted one
cleared back to every host's own state (GDR_FAULT_SEED replays a seed)."""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "jobs", "cluster")
CLUSTER, FAULT, GEN = (os.path.join(JOBS, f) for f in ("cluster.sh", "fault.sh", "fault_gen.py"))
ENV = dict(os.environ, GDR_CLUSTER="gf", GDR_CLUSTER_SUBNET="204")
JOB_DIR = "/run/gdrcluster/gf/jobs"   # fault.sh's background jobs of this cluster


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def sh(*cmd, rc=0):
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=60)
    check(p.returncode == rc, f"{' '.join(cmd)}: exit {p.returncode}, want {rc}: {p.stdout} {p.stderr}")
    return p.stdout + p.stderr


def rate(host, way):
    """The kbit/s of the host's class 1:10 in that direction, as tc shows it."""
    dev = ["ip", "netns", "exec", f"gdrc-{host}", "tc", "class", "show", "dev", "eth0", "classid", "1:10"] \
        if way == "egress" else ["tc", "class", "show", "dev", f"gfv{host[2:]}", "classid", "1:10"]
    words = sh(*dev).split()
    r = words[words.index("rate") + 1]
    n = float(r.rstrip("KMGbit").rstrip("kmg"))
    return n * {"Mbit": 1000, "Kbit": 1, "Gbit": 1e6}.get(r[len(r.rstrip("KMGbit")):], 1e-3)


def sent_through(pct, count):
    """`count` datagrams from gf2 to gf3 under `loss gf2 PCT egress`: what its rules dropped and passed."""
    sh(FAULT, "loss", "gf2", pct, "egress")
    send = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for i in range({count}):\n    try: s.sendto(b'x' * 200, ('169.254.204.3', 9))\n    except OSError: pass\n")
    subprocess.run(["ip", "netns", "exec", "gdrc-gf2", sys.executable, "-c", send], check=True, timeout=60)
    out = sh(FAULT, "counters", "gf2")
    print(out.strip())
    check("ingress" not in out, f"egress only, yet: {out}")
    words = out.split()
    return int(words[words.index("dropped") + 1]), int(words[words.index("passed") + 1])


def loss():
    # The peer's address resolved first: on a fresh cluster the first datagram waits on ARP, and
    # a dropped ARP request (10 % here) leaves the rest queued and discarded before the wire.
    # A TCP connect to a closed port resolves it: it returns once the peer's reset arrives.
    knock = ("import socket\ntry: socket.create_connection(('169.254.204.3', 9), timeout=10)\n"
             "except ConnectionRefusedError: pass\n")
    subprocess.run(["ip", "netns", "exec", "gdrc-gf2", sys.executable, "-c", knock], check=True, timeout=30)
    dropped, passed = sent_through("10", 4000)
    share = dropped / (dropped + passed)
    check(dropped + passed >= 4000 and 0.08 < share < 0.12, f"loss 10 %: dropped {dropped} passed {passed}")
    dropped, passed = sent_through("100", 300)  # the edge: no draw, every packet
    check(dropped >= 300 and passed == 0, f"loss 100 %: dropped {dropped} passed {passed}")
    sh(FAULT, "clear", "gf2")
    check("no loss rules" in sh(FAULT, "counters", "gf2"), "clear left the loss rules")
    return share


def flap():
    print(sh(FAULT, "flap", "gf2", "50", "1", "40", "3", "ingress").strip())
    slow = []
    t_end = time.monotonic() + 3.0
    while time.monotonic() < t_end:
        slow.append(rate("gf2", "ingress") < 15000)   # 20 Mbit/s / 1.5 = 13.3
        check(rate("gf2", "egress") == 20000, "flap ingress touched egress")
        time.sleep(0.05)
    share = sum(slow) / len(slow)
    check(0.25 < share < 0.55, f"slow {share:.2f} of the time, duty 40 %")
    time.sleep(1.0)
    check(rate("gf2", "ingress") == 20000, "the flap ended at a rate not its old one")
    log = open(os.path.join(JOB_DIR, "flap-gf2.log")).read().split()
    check(log.count("slow") == 3 and "done" in log, f"3 slow phases in 3 s, then done: {log}")
    print(sh(FAULT, "flap", "gf3", "50", "1", "40", "60").strip())   # cleared long before its end
    time.sleep(0.2)
    sh(FAULT, "clear")
    check(not os.path.exists(os.path.join(JOB_DIR, "flap-gf3.pid")), "clear left the flap's pid file")
    time.sleep(1.2)
    check(rate("gf3", "egress") == 20000 and rate("gf3", "ingress") == 20000, "a cleared flap still runs")
    return share


def stall():
    sh(FAULT, "nic", "gf3", "egress", "25")   # 16 Mbit/s: the stall gives it back, not 20
    print(sh(FAULT, "stall", "100", "0.5", "1").strip())
    time.sleep(0.9)
    during = {(h, w): rate(h, w) for h in ("gf1", "gf2", "gf3") for w in ("egress", "ingress")}
    check(all(abs(v - (16000 if k == ("gf3", "egress") else 20000) / 2) < 10 for k, v in during.items()),
          f"during the stall: {during}")
    time.sleep(1.2)
    after = {(h, w): rate(h, w) for h in ("gf1", "gf2", "gf3") for w in ("egress", "ingress")}
    check(all(v == (16000 if k == ("gf3", "egress") else 20000) for k, v in after.items()), f"after: {after}")
    sh(FAULT, "clear")


def at():
    sh(FAULT, "at", "0.5", "nic", "gf2", "both", "100")
    sh(FAULT, "at", "0.5", "nic", "gf3", "both", "100")
    sh(FAULT, "clear")
    time.sleep(1.0)
    check(rate("gf2", "egress") == 20000, "clear did not stop an `at` before it fired")
    sh(FAULT, "at", "0.3", "nic", "gf2", "both", "100")
    time.sleep(0.8)
    check(rate("gf2", "egress") == 10000, "`at` did not fire")
    sh(FAULT, "clear")


def generated():
    for cls in ("steady", "intermittent", "loss", "stall", "late"):
        p = subprocess.run([sys.executable, GEN, "--hosts", "3", "--class", cls, "--apply"], env=ENV,
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"fault_gen {cls}: exit {p.returncode}: {p.stderr}")
        f = json.loads(p.stdout)
        check(f["class"] == cls and f["seed"] > 0 and len(f["applied"]) == len(f["commands"]), f"{cls}: {f}")
        check(f["bad_hosts"] == ([] if cls == "stall" else [f["faults"][0]["host"]]) and "gf1" not in f["bad_hosts"],
              f"{cls}: bad hosts {f['bad_hosts']}")
        sh(FAULT, "clear")
    a = subprocess.run([sys.executable, GEN, "--hosts", "3", "--seed", "7"], env=ENV, capture_output=True, text=True)
    b = subprocess.run([sys.executable, GEN, "--hosts", "3", "--seed", "7"], env=ENV, capture_output=True, text=True)
    check(a.stdout == b.stdout and a.returncode == 0, "one seed, two faults")


def bad_input():
    for args in (("flap", "gf2", "40", "0.1", "50", "10"), ("flap", "gf2", "40", "2", "100", "10"),
                 ("flap", "gf2", "40", "2", "50", "99999"), ("loss", "gf2", "101"), ("loss", "gf2", "3", "up"),
                 ("stall", "50", "-1", "3"), ("at", "1", "rm", "-rf"), ("loss", "nohost", "3")):
        out = sh(FAULT, *args, rc=2)
        check(out.count("\n") == 1, f"{args}: {out!r}")
    p = subprocess.run([sys.executable, GEN, "--hosts", "1"], env=ENV, capture_output=True, text=True)
    check(p.returncode == 2 and p.stderr.count("\n") == 1, f"fault_gen --hosts 1: {p.returncode} {p.stderr!r}")


# Drawn arguments for every fault, valid and not, by seed: each pool holds a command's good
# values beside their edges and their wrong forms (the chosen list above missed `loss HOST 100`,
# a PCT that left tc a rate of 0, `mtu 0068`, and `at` taking a fault it could not apply later).
HOSTS_OK = ("gf1", "gf2", "gf3")
POOLS = {
    "host": HOSTS_OK + ("gf9", "", "gf", "-x", "gf1 gf2"),
    "slow": ("0", "00", "5", "12.5", "100", "100000", "100001", "99999999", "1e3", "-1", "5.", ".5", "abc", "", "nan",
             "inf", "0x10"),
    "loss": ("0", "0.004", "1.5", "99.999", "100", "100.0", "100.01", "101", "-1", "1e1", "x"),
    "dir": ("egress", "ingress", "both", "up", "", "EGRESS"),
    "secs": ("0", "0.1", "0.2", "1", "3600", "3601", "-1", "1e2", "abc"),
    "duty": ("0", "0.5", "50", "99.9", "100", "150", "-5", "x"),
    "mtu": ("67", "68", "0068", "1500", "9000", "65535", "65536", "abc", "1e3"),
    "quota": ("0", "50", "100000", "100001", "-1", "q"),
    "link": ("down", "0", "25", "100001", "up"),
}
SHAPES = {"nic": ("host", "dir", "slow"), "link": ("host", "host", "link"), "cpu": ("host", "quota"),
          "down": ("host",), "freeze": ("host",), "flap": ("host", "slow", "secs", "duty", "secs", "dir"),
          "loss": ("host", "loss", "dir"), "counters": ("host",), "stall": ("slow", "secs", "secs"),
          "mtu": ("host", "mtu"), "clear": ("host",)}
BAD_LOG = ("Error", "RTNETLINK", "required", "usage", "Cannot", "nvalid", "No such")


def drawn_command(rng):
    cmd = rng.choice(sorted(SHAPES))
    args = [rng.choice(POOLS[k]) if rng.random() < 0.6 else rng.choice(POOLS[k][:3]) for k in SHAPES[cmd]]
    r = rng.random()
    if r < 0.08:
        args = args[:-1]                                  # one argument short
    elif r < 0.12:
        args.append(rng.choice(POOLS["host"]))            # one too many
    if rng.random() < 0.15 and cmd != "clear":
        return ["at", rng.choice(("0", "0.2", "3601", "x")), cmd] + args
    return [cmd] + args


def clean_state():
    """After `clear`: every host at the cluster's rate both ways, MTU 1500, no loss rules, no job."""
    for h in HOSTS_OK:
        for way in ("egress", "ingress"):
            check(rate(h, way) == 20000, f"{h} {way} at {rate(h, way)} kbit after clear")
        mtu = subprocess.run(["ip", "netns", "exec", f"gdrc-{h}", "cat", "/sys/class/net/eth0/mtu"],
                             capture_output=True, text=True).stdout.strip()
        check(mtu == "1500", f"{h} MTU {mtu} after clear")
        check("no loss rules" in sh(FAULT, "counters", h), f"{h}: loss rules after clear")
    left = [f for f in os.listdir(JOB_DIR) if f.endswith(".pid")] if os.path.isdir(JOB_DIR) else []
    check(not left, f"jobs left after clear: {left}")


def drawn_input(draws=60, seed=None):
    """Drawn commands: each ends in exit 0, or exit 2 with one line; a fault accepted leaves no
    error in its job's log, and `clear` then gives every host its own state back."""
    import random
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 32)
    rng, tally = random.Random(seed), {0: 0, 2: 0}
    for i in range(draws):
        args = drawn_command(rng)
        p = subprocess.run([FAULT, *args], env=ENV, capture_output=True, text=True, timeout=60)
        out = p.stdout + p.stderr
        what = f"seed {seed} draw {i}: fault.sh {' '.join(repr(a) for a in args)}: exit {p.returncode} {out!r}"
        check(p.returncode in (0, 2), what)
        tally[p.returncode] += 1
        if p.returncode == 2:
            check(out.count("\n") == 1 and out.startswith("fault.sh: "), what)
            continue
        time.sleep(0.4 if args[0] in ("flap", "stall", "at") else 0)
        logs = "".join(open(os.path.join(JOB_DIR, f)).read() for f in os.listdir(JOB_DIR) if f.endswith(".log")) \
            if os.path.isdir(JOB_DIR) else ""
        check(not any(w in logs for w in BAD_LOG), f"{what}; its job's log: {logs[-600:]}")
        sh(FAULT, "clear")
        clean_state()
        for f in os.listdir(JOB_DIR) if os.path.isdir(JOB_DIR) else ():
            os.remove(os.path.join(JOB_DIR, f))   # the logs of the jobs clear ended
    print(f"drawn input: seed {seed}, {draws} commands, {tally[0]} applied and cleared, {tally[2]} refused")


def main():
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(77)
    if subprocess.run(["which", "nft"], capture_output=True).returncode != 0:
        print("SKIP: no nft (jobs/deps/debian-cluster.txt)")
        sys.exit(77)
    subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    sh(CLUSTER, "up", "3", "20")
    t0 = time.monotonic()
    try:
        bad_input()
        drawn_input(seed=int(os.environ["GDR_FAULT_SEED"]) if os.environ.get("GDR_FAULT_SEED") else None)
        ls = loss()
        fs = flap()
        stall()
        at()
        generated()
    finally:
        subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    print(f"loss 10 % asked: {100 * ls:.2f} % dropped; flap duty 40 %: slow {100 * fs:.0f} % of the samples; "
          f"{time.monotonic() - t0:.1f} s")
    print("PASS")


if __name__ == "__main__":
    main()
