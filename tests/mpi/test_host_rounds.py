"""`--pattern host-rounds` and `--budget` on a real launch: 6 ranks under mpirun,
each in its own UTS namespace named as one of 3 hosts (fake_host.sh, the emulated
cluster's way of naming hosts). The file stores the schedule (host pairs per round,
rank -> host, rails) and the budget decision; both match results/gdranalysis/schedule.py
(the model validate and the simulators use); every case's flows are cross-host and
rail-aligned; `suspects` reads the file, recomputes the schedule from it and judges
its links. `--max-rounds 2` runs the first 2 of the 3 rounds, stores them, and suspects
finds the file consistent; so does a budget too small for every round by the model (it runs the rounds that fit
at what a case costs here). Ranks bound to NICs (UCX_NET_DEVICES) pair by NIC, not local index; so do
ranks bound to CPUs whose local RDMA NICs hwloc names (a two-package XML topology). Bad input (uneven hosts, one host, a budget below the
minimum, a malformed duration, --max-rounds without a rounds pattern): one line, exit 2."""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

import h5py

from gdrtest import *  # noqa: F401,F403

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))
from gdranalysis import schedule  # noqa: E402

BUDGET = 20
ARGS = ["run", "-t", "bw", "-T", "mpi", "-m", "host", "-b", "4K", "-e", "16K", "-f", "4", "--window", "4",
        "--pattern", "host-rounds", "--timeout", "60"]


def launch(np_, args, per=2, fake=True, nics="", cpus="", topology="", nics_by="", extra_env=()):
    cmd = ["mpirun", "-q", "--oversubscribe", "-np", str(np_), "-x", f"GDR_FAKE_PER={per}", "-x", f"GDR_FAKE_NICS={nics}",
           "-x", f"GDR_FAKE_CPUS={cpus}", "-x", f"GDR_FAKE_NICS_BY={nics_by}"]
    for kv in extra_env:
        cmd += ["-x", kv]
    if topology:  # hwloc reads this machine as the XML says, its bindings for real
        cmd += ["--bind-to", "none", "-x", f"HWLOC_XMLFILE={topology}", "-x", "HWLOC_THISSYSTEM=1"]
    cmd += [os.path.join(HERE, "fake_host.sh")] if fake else []
    t0 = time.monotonic()
    p = subprocess.run(cmd + [GDRBENCH] + args, capture_output=True, text=True, timeout=120, env=env())
    return p, time.monotonic() - t0


def refused(p, words):
    lines = [l for l in p.stderr.splitlines() if l.startswith("gdrbench:")]
    check(p.returncode == 2, f"exit {p.returncode}, want 2: {p.stderr[-600:]}")
    check(len(lines) >= 1 and all(w in lines[0] for w in words), f"want {words} in one line: {p.stderr[-600:]}")


def check_file(h5, nsizes, max_rounds=0, rails="0,1,0,1,0,1", budget=BUDGET):
    with h5py.File(h5, "r") as f:
        facts = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["facts"].attrs.items()}
        every = [dict(g.attrs) | {"flows": g["flows"][()]} for _, g in sorted(f["cases"].items())]
        check("link_cells/bw_mpi_host_direct_host-rounds" in f, f"no link matrix: {list(f.get('link_cells', {}))}")
    cases = [c for c in every if c["pattern"] != "retest"]  # the retests' steps (src/planning/retest.h) apart
    H, ppn = 3, 2
    check(facts["schedule.patterns"] == "host-rounds", facts.get("schedule.patterns"))
    check(facts["schedule.host_rounds.hosts"] == "fh0,fh1,fh2", facts["schedule.host_rounds.hosts"])
    check(facts["schedule.host_rounds.rank_host"] == "0,0,1,1,2,2", facts["schedule.host_rounds.rank_host"])
    check(facts["schedule.host_rounds.rank_rail"] == rails, facts["schedule.host_rounds.rank_rail"])
    rail = [int(x) for x in rails.split(",")]
    run_rounds = schedule.rounds_run(H, max_rounds)
    want = "; ".join(" ".join(f"{a}-{b}" for a, b in schedule.host_pairs(H, r)) for r in range(run_rounds))
    check(facts["schedule.host_rounds.host_pairs"] == want, f"{facts['schedule.host_rounds.host_pairs']} != {want}")
    check(facts["schedule.host_rounds.rounds"] == str(run_rounds), facts["schedule.host_rounds.rounds"])
    check(facts.get("schedule.max_rounds", "0") == str(max_rounds), facts.get("schedule.max_rounds"))
    steps = schedule.steps("host-rounds", H * ppn, hosts=H, max_rounds=max_rounds)
    check(len(cases) == steps * nsizes, f"{len(cases)} cases, the model says {steps} steps x {nsizes} sizes")
    check(steps < schedule.steps("rounds", H * ppn), "host-rounds is not shorter than rounds")
    for c in cases:
        r = int(c["step"]) // 2
        pairs = {(int(s) // ppn, int(d) // ppn) for s, d in c["flows"]}
        check({tuple(sorted(p)) for p in pairs} == set(schedule.host_pairs(H, r)), f"step {c['step']}: {pairs}")
        check(all(rail[int(s)] == rail[int(d)] for s, d in c["flows"]), f"step {c['step']} not rail-aligned")
        check(len(c["flows"]) == ppn * len(schedule.host_pairs(H, r)), f"step {c['step']}: {len(c['flows'])} flows")
    if max_rounds or "budget.cases" not in facts or budget != BUDGET:
        return len(cases)
    # The budget decision is the Python model's (validate, simulators), to the millisecond.
    # With the retests' share: rounds x steps set aside (schedule.budget_cases).
    n = schedule.budget_cases(len(cases), retest=True)
    ct = schedule.case_time_s(BUDGET, n, H)
    check(facts["budget.cases"] == str(n), f"{facts['budget.cases']} != {n}")
    check(facts["budget.retest_cases"] == str(schedule.retest_cases(True)), facts["budget.retest_cases"])
    check(abs(float(facts["budget.case_time_s"]) - ct) < 1e-3, f"case time {facts['budget.case_time_s']} vs {ct:.4f}")
    check(abs(float(facts["budget.min_s"]) - schedule.min_budget_s(n, H)) < 1e-3, facts["budget.min_s"])
    check(len(every) - len(cases) <= schedule.retest_cases(True), f"{len(every) - len(cases)} retest steps")
    return len(cases)


def budget_run(d):
    """The full schedule under --budget 20s: kept, paced, the model's decision, judged by suspects."""
    h5 = os.path.join(d, "hr.h5")
    p, wall = launch(6, ARGS + ["--budget", f"{BUDGET}s", "--retest", "auto", "--output", h5])
    check(p.returncode == 0, f"exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    check("host-rounds: 3 hosts x 2 ranks, 3 rounds" in p.stdout and f"--budget {BUDGET} s:" in p.stdout,
          f"the plan is not printed at start:\n{p.stdout[:2000]}")
    check(wall <= BUDGET, f"{wall:.1f} s over the {BUDGET} s budget")
    with h5py.File(h5, "r") as f:
        kept = {k: str(f["facts"].attrs[k]) for k in ("budget.kept", "budget.elapsed_s")}
        paced = [float(g.attrs["case_time_s"]) for g in f["cases"].values()]
    check(kept["budget.kept"] == "yes" and float(kept["budget.elapsed_s"]) <= BUDGET, f"file says {kept}")
    n = check_file(h5, nsizes=2)
    # Paced (tests/unit/test_host_rounds.cpp): each case its share of what is left, never more
    # than the plan's case time.
    planned = float(h5py.File(h5, "r")["facts"].attrs["budget.case_time_s"])
    check(all(0 < t <= planned + 1e-9 for t in paced), f"case times {paced}, planned {planned}")
    s = subprocess.run([GDRBENCH, "suspects", h5, "--json"], capture_output=True, text=True, timeout=120)
    check(s.returncode in (0, 1), f"suspects exit {s.returncode}: {s.stderr}")
    rep = json.loads(s.stdout)
    check("host-rounds over 3 hosts x 2 ranks" in rep["schedule"], rep["schedule"])
    check(rep["schedule_problems"] == [], rep["schedule_problems"])
    check(rep["judged"] > 0, "suspects judged nothing")
    print(f"{n} cases in {wall:.1f} s of a {BUDGET} s budget; suspects: {rep['schedule']}")


def max_rounds_sample(d):
    """A sample of the tournament: the first 2 of 3 rounds, stored as such, consistent for suspects."""
    h5s = os.path.join(d, "hr2.h5")
    p, _ = launch(6, ARGS + ["-n", "3", "--max-rounds", "2", "--output", h5s])
    check(p.returncode == 0, f"--max-rounds 2: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    check("--max-rounds 2: 2 of the 3 rounds, 2 of 3 host pairs" in p.stdout, f"no sample note:\n{p.stdout[:2000]}")
    n2 = check_file(h5s, nsizes=2, max_rounds=2)
    check(n2 == 2 * 2 * 2, f"{n2} cases, want 2 rounds x 2 directions x 2 sizes")
    s = subprocess.run([GDRBENCH, "suspects", h5s, "--json"], capture_output=True, text=True, timeout=120)
    rep = json.loads(s.stdout)
    check("2 rounds of 3 (--max-rounds)" in rep["schedule"] and rep["schedule_problems"] == [],
          f"{rep['schedule']}: {rep['schedule_problems']}")


def small_budget_sample(d):
    """A budget too small for every round by the model (17 s) starts with the rounds the model fits
    (schedule.rounds_that_fit), then runs as many as fit at what a case has cost so far
    (src/planning/schedule.h RoundBudget): whole rounds, stored and said as what ran."""
    h5b = os.path.join(d, "hr-sample.h5")
    p, wall = launch(6, ARGS + ["--budget", "15s", "--retest", "auto", "--output", h5b])
    k = schedule.rounds_that_fit(15, "host-rounds", 6, 3, 2, retest=True)
    check(k == 2, f"the model fits {k} rounds in 15 s, the test wants 2")
    check(p.returncode == 0 and wall <= 15, f"--budget 15s: exit {p.returncode} in {wall:.1f} s\n{p.stderr[-2000:]}")
    check("--budget 15 s: every round needs 17 s by the model (0.35 s a case beside its timed work); its first 2 "
          "rounds fit, so the run starts with them" in p.stdout, f"no sample note:\n{p.stdout[:2000]}")
    with h5py.File(h5b, "r") as f:
        facts = {key: str(v) for key, v in f["facts"].attrs.items()}
    ran = int(facts["budget.rounds_run"])
    check(1 <= ran <= 3 and f"--budget: {ran} of the 3 planned rounds ran" in p.stdout, f"{ran} rounds:\n{p.stdout}")
    nb = check_file(h5b, nsizes=2, max_rounds=ran if ran < 3 else 0, budget=15)
    check(facts["budget.model_rounds"] == str(k) and facts["budget.kept"] == "yes", f"facts {facts}")
    check(facts.get("budget.max_rounds", "0") == (str(ran) if ran < 3 else "0"), f"facts {facts}")
    sample = schedule.budget_cases(2 * 2 * k, retest=True)  # the case time is the model's sample's share
    check(facts["budget.cases"] == str(sample), f"budget.cases {facts['budget.cases']}")
    check(abs(float(facts["budget.case_time_s"]) - schedule.case_time_s(15, sample, 3)) < 1e-3,
          f"case time {facts['budget.case_time_s']}")
    print(f"--budget 15s: the model fits {k} rounds, {ran} ran ({nb} cases in {wall:.1f} s, a case "
          f"{facts['budget.overhead_s']} s beside its timed work)")


def nic_rails(d):
    """Rails from the NIC each rank is bound to (UCX_NET_DEVICES), host fh1 listing its two NICs the
    other way round: rank 0 (fh0, nicA) meets rank 3 (fh1, nicA), not rank 2."""
    h5n = os.path.join(d, "hr-nic.h5")
    p, _ = launch(6, ARGS + ["-n", "3", "-e", "4K", "--output", h5n], nics="nicA,nicB,nicB,nicA,nicA,nicB")
    check(p.returncode == 0, f"NIC rails: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    check("rails by NIC (UCX_NET_DEVICES: nicA,nicB)" in p.stdout, f"no NIC rails in the plan:\n{p.stdout[:2000]}")
    check_file(h5n, nsizes=1, max_rounds=0, rails="0,1,1,0,0,1")
    check(str(h5py.File(h5n, "r")["facts"].attrs["schedule.host_rounds.rails"]).startswith("NIC (UCX_NET_DEVICES"),
          "rails fact")
    s = subprocess.run([GDRBENCH, "suspects", h5n, "--json"], capture_output=True, text=True, timeout=120)
    check(json.loads(s.stdout)["schedule_problems"] == [], f"suspects on NIC rails: {s.stdout[-800:]}")


def hca_rails(d):
    """The same NICs given as verbs' --hca flag, over a GDR_VERBS_HCA that names one NIC for every
    rank: the flag wins, so the rails are the flag's (a NIC bound by flag was once never seen)."""
    h5h = os.path.join(d, "hr-hca.h5")
    has_hca = "--hca" in subprocess.run([GDRBENCH, "run", "--help"], capture_output=True, text=True).stdout
    p, _ = launch(6, ARGS + ["-n", "3", "-e", "4K", "--output", h5h], nics="nicA,nicB,nicB,nicA,nicA,nicB",
                  nics_by="hca", extra_env=["GDR_VERBS_HCA=nicZ:1"])
    check(p.returncode == 0 or not has_hca, f"--hca rails: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    if has_hca:
        check("rails by NIC (verbs --hca: nicA,nicB)" in p.stdout, f"no --hca rails in the plan:\n{p.stdout[:2000]}")
        check_file(h5h, nsizes=1, max_rounds=0, rails="0,1,1,0,0,1")
    else:
        print("note: --hca rails not tried: this build has no verbs transport")


def topology_rails(d):
    """Rails from the topology where no variable binds a rank to a NIC: each rank bound to one CPU
    (taskset), hwloc reading a machine of two packages with an RDMA NIC each (nicA by CPU 0, nicB
    by CPU 1); host fh1's ranks on the CPUs the other way round."""
    if len(os.sched_getaffinity(0)) >= 2 and {0, 1} <= os.sched_getaffinity(0):
        h5t = os.path.join(d, "hr-topo.h5")
        p, _ = launch(6, ARGS + ["-n", "3", "-e", "4K", "--output", h5t], cpus="0,1,1,0,0,1",
                      topology=os.path.join(HERE, "data", "two_packages_two_nics.xml"))
        check(p.returncode == 0, f"topology rails: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        check("rails by NIC (hwloc: the RDMA NIC local to each rank's CPU binding: nicA,nicB)" in p.stdout,
              f"no topology rails in the plan:\n{p.stdout[:2000]}")
        check_file(h5t, nsizes=1, max_rounds=0, rails="0,1,1,0,0,1")
    else:
        print("note: rails from the topology not tried: CPUs 0 and 1 are not both ours")


def bad_input():
    """Bad input, each one line and exit 2; launched at once (each is mpirun's start-up, ~2.5 s)."""
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        bad = [(ex.submit(launch, 5, ARGS), ["same number of ranks on every host", "fh0 has 2", "fh2 has 1"]),
               (ex.submit(launch, 2, ARGS, fake=False), ["needs ranks on 2 or more hosts"]),
               (ex.submit(launch, 2, ARGS + ["--budget", "3s"], per=1),
                ["--budget 3 s is below the minimum", "4 cases on 2 hosts"]),
               (ex.submit(launch, 1, ARGS + ["--budget", "2x"], fake=False), ["--budget '2x'", "90s, 2m or 1h"]),
               (ex.submit(launch, 1, ["run", "--max-rounds", "2"], fake=False),
                ["--max-rounds applies to --pattern rounds or host-rounds"])]
        for fut, words in bad:
            refused(fut.result()[0], words)


def run():
    if os.geteuid() != 0:
        print("SKIP: needs root (unshare --uts)")
        sys.exit(77)
    d = tmpdir()
    budget_run(d)
    max_rounds_sample(d)
    small_budget_sample(d)
    nic_rails(d)
    hca_rails(d)
    topology_rails(d)
    bad_input()


if __name__ == "__main__":
    main(run)
