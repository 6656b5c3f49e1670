"""Configuration drift and a moved counter, named by `gdrbench validate` on a real 4-host
emulated cluster (jobs/cluster). gt2's NIC MTU is 1000 against its peers' 1500 (fault.sh mtu):
TCP adapts to it, so no timing names gt2, but validate compares the hosts' doctor reports and
names gt2, alone, with class configuration ("eth0 MTU 1000, its 3 peers 1500"). Mid-run gt3's
NIC goes down and up again: its eth0 carrier_changes rise by 2 between validate's two reads,
and validate names that port beside gt3's verdict. ~35 s."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from test_validate import CLUSTER, ENV, FAULT, HOSTS, check, sh, validate


def flap_mid_run(out, host, log):
    """Once the run has printed its header (its ranks are up), the host's NIC down and up."""
    path = os.path.join(out, "bench-4-hosts.out")
    for _ in range(300):   # 30 s at most
        if os.path.exists(path) and os.path.getsize(path) > 0:
            break
        time.sleep(0.1)
    else:
        log.append("the run never started")
        return
    time.sleep(1.0)
    for state in ("down", "up"):
        subprocess.run([CLUSTER, "exec", host, "ip", "link", "set", "eth0", state], env=ENV, check=True, timeout=20)
    log.append(f"{host} eth0 down and up at {time.strftime('%T')}")


def main():
    gdr = os.environ["GDRBENCH"]
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        sys.exit(77)
    subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    t0 = time.monotonic()
    sh(CLUSTER, "up", "4", "20")
    try:
        sh(FAULT, "mtu", "gt2", "1000")
        with tempfile.TemporaryDirectory() as d:
            out, log = os.path.join(d, "drift"), []
            flap = threading.Thread(target=flap_mid_run, args=(out, "gt3", log))
            flap.start()
            p, took = validate(gdr, out, "--no-report")
            flap.join(timeout=40)
            print(*log)
            check(log and "down and up" in log[0], f"no flap: {log}")
            doc = json.load(open(os.path.join(out, "validate.json")))
            check(p.returncode == 1 and doc["exit"] == 1, f"exit {p.returncode}")
            conf = [f for f in doc["findings"] if f["kind"] == "configuration"]
            check([f["hosts"] for f in conf] == [["gt2"]], f"configuration findings {conf}")
            check(all(f.get("cls") == "configuration" for f in conf), f"configuration findings' class {conf}")
            check("eth0 MTU 1000, its 3 peers 1500" in conf[0]["evidence"], f"evidence {conf[0]['evidence']}")
            st = {v["host"]: v["status"] for v in doc["verdicts"]}
            check(st["gt2"] == "suspect" and st["gt1"] == st["gt4"] == "healthy", f"verdicts {st}")
            check(list(doc["counters_moved"]) == ["gt3"] and "eth0 carrier_changes +2" in doc["counters_moved"]["gt3"],
                  f"counters moved: {doc['counters_moved']}")
            why = {v["host"]: v["why"] for v in doc["verdicts"]}
            check("counters moved: eth0 carrier_changes +2" in why["gt3"], f"gt3's why: {why['gt3']}")
            check(doc["elapsed_s"] <= 40, f"{doc['elapsed_s']} s over the budget")
            check("configuration gt2: eth0 MTU 1000" in p.stdout, "the table does not name gt2's MTU")
        sh(FAULT, "clear", "gt2")
        check("mtu 1500" in sh(CLUSTER, "exec", "gt2", "ip", "link", "show", "eth0"), "clear left gt2's MTU")
    finally:
        subprocess.run([CLUSTER, "down"], env=ENV, capture_output=True, timeout=60)
    print(f"validate {took:.1f} s, test {time.monotonic() - t0:.1f} s, hosts {HOSTS}")
    print("PASS")


if __name__ == "__main__":
    main()
