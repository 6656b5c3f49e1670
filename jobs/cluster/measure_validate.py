#!/usr/bin/python3
"""How often `gdrbench validate` is wrong, per fault class and severity, on the
emulated cluster (cluster.sh, fault.sh). Bounded: --trials per cell and a
--time-limit for the whole loop. Appends one JSON line per trial to --out
(results/archive/<date>_cluster_validate-error-rates.jsonl) and writes the
summary (Wilson 95 % intervals) beside it as .txt; `--summarize FILE` only
redoes the summary.

  sudo jobs/cluster/measure_validate.py --gdrbench build/gdrbench --hosts 4 \\
      --cells healthy,link:10,link:25,nic-both:10,cpu:5,down --trials 10 --time-limit 3000

A cell is CLASS[:SEVERITY]: healthy; link:PCT (one link, both directions) or
link:down (it carries nothing);
nic-egress|nic-ingress|nic-both:PCT; cpu:QUOTA_PCT (every process of a host
limited to that share of one CPU, applied once its rank runs); down (its NIC
goes down mid-run); freeze (its processes stopped mid-run). Trials come in
pairs on the same target, so that "same verdict on a rerun" is measured.
The cluster is made and removed here (trap), one per host count.

Generated faults (`--gen CLASSES`, fault_gen.py): every trial draws its seed from
os.urandom, its fault from that seed (class from the list, severity, host,
direction, onset, duration: the ranges in fault_gen.py), applies it through
fault.sh just before validate starts, and records the ground truth, what
validate named, and what the fault did (the loss rules' counters, the flap's
and stall's logged changes of rate). `--rerun` runs each drawn fault twice.

  sudo jobs/cluster/measure_validate.py --gdrbench build/gdrbench --hosts 4 \\
      --gen steady,intermittent,loss,stall --trials 5 --budget 40 --time-limit 1500

Per class: recall (bad hosts named, of bad hosts), trials with every bad host
named, the healthy-host rate (healthy hosts named, of healthy hosts judged),
the class validate gave where its findings carry one, rerun agreement; Wilson
95 % intervals; a table (.txt) and the rows as JSON (.json) beside the .jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))
from gdranalysis import schedule  # noqa: E402
from gdranalysis.intervals import wilson  # noqa: E402
import fault_gen  # noqa: E402  (this folder: sys.path[0] when run as a script)
CLUSTER, FAULT, AGENT = (os.path.join(HERE, f) for f in ("cluster.sh", "fault.sh", "rsh-agent.sh"))
NAME, SUBNET = os.environ.get("GDR_CLUSTER", "gm"), os.environ.get("GDR_CLUSTER_SUBNET", "202")   # default gm/202
ENV = dict(os.environ, GDR_CLUSTER=NAME, GDR_CLUSTER_SUBNET=SUBNET, OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
LAUNCHER_ARGS = subprocess.run([CLUSTER, "launcher-args"], capture_output=True, text=True, check=True).stdout.strip()


def sh(*cmd, check=True, timeout=120):
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def pick_target(cls, hosts, rng):
    """Never the first host: mpirun and validate run there (the login node)."""
    if cls == "healthy":
        return []
    if cls == "link":
        return sorted(rng.sample(hosts[1:], 2), key=hosts.index)
    return [rng.choice(hosts[1:])]


def apply_fault(cls, sev, target):
    if cls == "link":
        sh(FAULT, "link", target[0], target[1], str(sev))
    elif cls.startswith("nic-"):
        sh(FAULT, "nic", target[0], cls[4:], str(sev))


def midrun_fault(cls, sev, target, stop, log):
    """cpu, down, freeze: once the host runs a rank of the bench (gdrbench run), apply it."""
    ns = f"gdrc-{target[0]}"
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline:
        pids = sh("ip", "netns", "pids", ns, check=False).split()
        cmdlines = []
        for p in pids:
            try:
                cmdlines.append(open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode())
            except OSError:
                pass
        if any(" run " in c and "gdrbench" in c for c in cmdlines):
            time.sleep(2.0 if cls != "cpu" else 0.3)   # down/freeze: mid-run, after a few cases
            args = {"cpu": ("cpu", target[0], str(sev)), "down": ("down", target[0]),
                    "freeze": ("freeze", target[0])}[cls]
            log.append(sh(FAULT, *args, check=False).strip())
            return
        time.sleep(0.2)
    log.append("mid-run fault never applied (no bench seen)")


def judge(cls, sev, target, doc, hosts):
    """found: the faulty part named as it is; wrong: hosts named that are not part of the fault."""
    status = {v["host"]: v["status"] for v in doc["verdicts"]}
    named = {h for h, s in status.items() if s in ("suspect", "failed")}   # "unknown" claims nothing
    wrong = sorted(named - set(target))
    f = doc["findings"]
    if cls == "healthy":
        found = None
    elif cls == "link":
        kind = "link-down" if sev == "down" else "link"
        found = any(x["kind"] == kind and sorted(x["hosts"]) == sorted(target) for x in f)
    elif cls in ("down", "freeze"):
        found = status.get(target[0]) == "failed"
    else:
        found = status.get(target[0]) == "suspect"
    whole_host_wrong = cls == "link" and any(not x["kind"].startswith("link") and set(x["hosts"]) & set(target)
                                             for x in f)
    return found, wrong, whole_host_wrong, status


def budget_args(spec, nhosts):
    """--budget 40 (every host count) or 4:40,8:70,16:120."""
    if not spec:
        return []
    for part in spec.split(","):
        n, _, b = part.rpartition(":")
        if not n or int(n) == nhosts:
            return ["--budget", b]
    return []


def rerun_agreement(runs, key):
    """(hosts with the same status in both runs of a pair, hosts compared): pairs by key(run)."""
    pairs = {}
    for r in runs:
        pairs.setdefault(key(r), []).append(r["status"])
    same = tot = 0
    for sts in pairs.values():
        if len(sts) == 2:
            same += sum(sts[0].get(h) == sts[1].get(h) for h in sts[0])
            tot += len(sts[0])
    return same, tot


def run_validate(a, hosts, out):
    """One validate from the first host, with the measurement's flags: (process, seconds)."""
    cmd = [CLUSTER, "exec", hosts[0], a.gdrbench, "validate", "--hostfile", sh(CLUSTER, "hostfile").strip(),
           "--launcher-args", LAUNCHER_ARGS, "--no-report", "--json", "--out", out, "-T", a.transport,
           "--min-slowdown", str(a.min_slowdown)] + a.validate_args.split() + budget_args(a.budget, len(hosts))
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=900)
    return p, time.monotonic() - t0


def trial(a, hosts, cls, sev, target, seq):
    out = f"/tmp/gdr-measure-validate/{seq}"
    subprocess.run(["rm", "-rf", out])
    sh(FAULT, "clear", check=False)
    apply_fault(cls, sev, target)
    stop, log = threading.Event(), []
    th = None
    if cls in ("cpu", "down", "freeze"):
        th = threading.Thread(target=midrun_fault, args=(cls, sev, target, stop, log))
        th.start()
    p, took = run_validate(a, hosts, out)
    stop.set()
    if th:
        th.join()
    sh(FAULT, "clear", check=False)
    sh(CLUSTER, "reap", check=False)   # what a dead or frozen host left running
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return {"error": f"validate exit {p.returncode}: {p.stderr.strip()[-400:]}", "took_s": round(took, 1)}
    found, wrong, whw, status = judge(cls, sev, target, doc, hosts)
    sus = doc.get("suspects") or {}
    return {"exit": p.returncode, "found": found, "p0": doc.get("p0"), "judged": sus.get("judged"),
            "outliers": sus.get("outliers"), "wrong_hosts": wrong, "whole_host_wrong": whw,
            "status": status, "findings": doc["findings"], "elapsed_s": doc["elapsed_s"], "budget_s": doc["budget_s"],
            "took_s": round(took, 1), "notes": doc["notes"], "fault_log": log,
            "retest": [[v["what"], v["state"]] for v in (sus.get("retest") or {}).get("verdicts", [])],
            "costs": run_costs(doc.get("judged_file"))}


def run_costs(h5):
    """The judged file's budget.* and scale.case_s.* facts (where a case's time went)."""
    if not h5 or not os.path.exists(h5):
        return {}
    import h5py
    with h5py.File(h5, "r") as f:
        attrs = f["facts"].attrs
        out = {k: str(attrs[k].decode() if isinstance(attrs[k], bytes) else attrs[k]) for k in attrs
               if k.startswith(("budget.", "scale.case_s."))}
        cases = [g.attrs for g in f["cases"].values()]
        out.update({"file.bytes": str(os.path.getsize(h5)), "file.cases": str(len(cases)),
                    "file.ranks": str(int(cases[0]["ranks"]) if cases else 0),
                    "file.iters_mean": f"{sum(int(c['iters']) for c in cases) / max(1, len(cases)):.2f}"})
        return out


def run_cells(a, nhosts, cells, rng, deadline, outf):
    sh(CLUSTER, "down", check=False)
    sh(CLUSTER, "up", str(nhosts), str(a.rate))
    hosts = [f"{NAME}{i}" for i in range(1, nhosts + 1)]
    try:
        order = [(c, t) for t in range(a.trials) for c in cells]   # interleaved: drift hits every cell alike
        targets = {}
        for seq, (cell, t) in enumerate(order):
            if time.monotonic() > deadline:
                print(f"time limit reached at {nhosts} hosts, trial {seq}", flush=True)
                return False
            cls, _, sev = cell.partition(":")
            if t % 2 == 0:
                targets[cell] = pick_target(cls, hosts, rng)
            sev = sev if sev in ("", "down") else float(sev)
            r = trial(a, hosts, cls, sev or None, targets[cell], f"{nhosts}-{seq}")
            rec = {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hosts": nhosts, "seq": seq, "rate_mbit": a.rate,
                   "transport": a.transport, "validate_args": a.validate_args, "class": cls, "severity": sev or None,
                   "target": targets[cell], "seed": a.seed, "pair": t // 2, "rerun": t % 2, "min_slowdown": a.min_slowdown, **r}
            outf.write(json.dumps(rec) + "\n")
            outf.flush()
            print(f"{nhosts} hosts {cell} #{t}: found={r.get('found')} wrong={r.get('wrong_hosts')} "
                  f"{r.get('elapsed_s')} s {r.get('error', '')}", flush=True)
        return True
    finally:
        sh(CLUSTER, "down", check=False)


def summarize(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    if len({r.get("rate_mbit") for r in rows}) > 1:   # several link rates: each its own cell
        for r in rows:
            r["transport"] = f"{r['transport']} @ {r.get('rate_mbit')} Mbit/s"
    cells = {}
    for r in rows:
        cells.setdefault((r["hosts"], r["transport"], r["class"], r["severity"]), []).append(r)
    out = [f"# {os.path.basename(path)}: {len(rows)} trials of gdrbench validate on the emulated cluster",
           "# found: the faulty part named as what it is (link: that link; nic/cpu: that host a suspect; "
           "down/freeze: that host failed); wrong hosts: healthy hosts named, per host judged; "
           "agree: hosts with the same verdict in the two runs of a pair (same fault, same target); "
           "intervals: Wilson 95 %",
           "| hosts | transport | fault | severity % | trials | found | recall [95 % CI] | wrong hosts | "
           "host FP rate [95 % CI] | whole-host wrong (link) | agree on rerun | elapsed s (median, max) / budget |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (n, tr, cls, sev), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2],
                                                                       str(kv[0][3] or 0).zfill(8))):
        ok = [r for r in rs if "error" not in r]
        errs = len(rs) - len(ok)
        k = sum(1 for r in ok if r["found"])
        judged = sum(n - len(r["target"]) for r in ok)
        wrong = sum(len(r["wrong_hosts"]) for r in ok)
        whw = sum(1 for r in ok if r.get("whole_host_wrong"))
        same, tot = rerun_agreement(ok, lambda r: (r.get("seed", 33), r["pair"]))
        el = sorted(r["elapsed_s"] for r in ok)
        rec = "-" if cls == "healthy" else f"{k}/{len(ok)}"
        lo, hi = wilson(k, len(ok))
        flo, fhi = wilson(wrong, judged)
        out.append(f"| {n} | {tr} | {cls} | {sev if sev is not None else '-'} | {len(rs)}"
                   f"{f' ({errs} errors)' if errs else ''} | {rec} | "
                   f"{'-' if cls == 'healthy' else f'{k / max(1, len(ok)):.2f} [{lo:.2f}, {hi:.2f}]'} | "
                   f"{wrong}/{judged} | {wrong / max(1, judged):.3f} [{flo:.3f}, {fhi:.3f}] | "
                   f"{whw if cls == 'link' else '-'} | {f'{same}/{tot}' if tot else '-'} | "
                   f"{el[len(el) // 2] if el else '-'}, {el[-1] if el else '-'} / {ok[0]['budget_s'] if ok else '-'} |")
    pooled = {}
    for (n, tr, cls, sev), rs in cells.items():
        for r in rs:
            if "error" not in r:
                w, j = pooled.get((n, tr), (0, 0))
                pooled[(n, tr)] = (w + len(r["wrong_hosts"]), j + n - len(r["target"]))
    out += ["", "Pooled over every trial (healthy runs and the hosts a fault did not touch):", "",
            "| hosts | transport | hosts judged that are not part of a fault | named | host FP rate [95 % CI] |",
            "| --- | --- | --- | --- | --- |"]
    for (n, tr), (w, j) in sorted(pooled.items()):
        lo, hi = wilson(w, j)
        out.append(f"| {n} | {tr} | {j} | {w} | {w / max(1, j):.4f} [{lo:.4f}, {hi:.4f}] |")
    out += cost_table(rows) + retest_table(rows) + rounds_table(rows)
    txt = path[:-len(".jsonl")] + ".txt" if path.endswith(".jsonl") else path + ".txt"
    with open(txt, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


COST_PARTS = ("total", "timed", "beside_timed", "test", "gather", "record")


def rounds_table(rows):
    """How many rounds the calibrated budget ran (src/planning/schedule.h RoundBudget) against the model's
    plan, each trial: runs that store budget.rounds_run."""
    got = [r for r in rows if "budget.rounds_run" in (r.get("costs") or {})]
    if not got:
        return []
    out = ["", "Rounds the run's budget ran, each trial (the model's plan: 0.35 s a case; the run: at each round's "
           "start, as many rounds as fit at what its cases had cost; src/planning/schedule.h RoundBudget):", "",
           "| hosts | Mbit/s | validate budget s | the run's budget s | model's rounds | rounds run | cases run | "
           "a case beside its timed work, s | run's budget kept | run took s |",
           "| --- " * 10 + "|"]
    for r in got:
        c = r["costs"]
        every = schedule.rounds(r["hosts"])
        model = c.get("budget.model_rounds", str(every))
        out.append(f"| {r['hosts']} | {r.get('rate_mbit')} | {r.get('budget_s')} | {c.get('budget.s')} | {model} of "
                   f"{every} | {c['budget.rounds_run']} | {c.get('file.cases', '-')} | {c.get('budget.overhead_s')} | "
                   f"{c.get('budget.kept')} | {c.get('budget.elapsed_s')} |")
    return out


def cost_table(rows):
    """Where a case's wall time went (scale.case_s.*_median of each judged run), per host count and
    link rate: the median over trials, seconds."""
    cells = {}
    for r in rows:
        c = r.get("costs") or {}
        if "scale.case_s.total_median" in c:
            cells.setdefault((r["hosts"], r.get("rate_mbit"), r["transport"]), []).append(c)
    if not cells:
        return []
    out = ["", "Where a case's time went (rank 0, the median over each run's cases, then over the trials; seconds; "
           "src/sweep/case_wall_time.h):", "",
           "| hosts | Mbit/s | transport | runs | cases a run | " + " | ".join(COST_PARTS) + " | budget.overhead_s |",
           "| --- " * (6 + len(COST_PARTS)) + "|"]
    from statistics import median as med
    for (n, rate, tr), cs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        parts = [f"{med([float(c[f'scale.case_s.{p}_median']) for c in cs]):.4f}" for p in COST_PARTS]
        over = [float(c["budget.overhead_s"]) for c in cs if "budget.overhead_s" in c]
        ncases = int(med([int(c.get("budget.cases", 0)) for c in cs]))
        out.append(f"| {n} | {rate} | {tr} | {len(cs)} | {ncases} | " + " | ".join(parts) +
                   (f" | {med(over):.3f} |" if over else " | - |"))
    out += fleet_schedule_table(cells, med) + file_size_table(cells)
    return out


def file_size_table(cells, ranks=8192, hosts=1024):
    """Bytes a case in the judged files, by ranks; a least-squares line through them, and what it
    says a case and a whole file would be at `ranks` ranks (1,024 hosts x 8) with the same
    iterations: every host pair (3 sizes) and --max-rounds 64."""
    import numpy as np
    pts = [(int(c["file.ranks"]), int(c["file.bytes"]) / int(c["file.cases"]), float(c["file.iters_mean"]))
           for cs in cells.values() for c in cs if "file.bytes" in c and int(c.get("file.cases", 0)) > 0]
    if len({r for r, _, _ in pts}) < 2:
        return []
    x, y = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)
    b, a = np.polyfit(x, y, 1)
    per = a + b * ranks
    every = schedule.steps("host-rounds", 0, hosts=hosts) * 3 * per
    sample = schedule.steps("host-rounds", 0, hosts=hosts, max_rounds=64) * 3 * per
    iters = sorted({round(p[2], 1) for p in pts})
    out = ["", "Bytes a case of the judged files (HDF5, every rank's every iteration), by ranks:", "",
           "| ranks | files | bytes a case (median) | iterations a case (mean) |", "| --- | --- | --- | --- |"]
    for r in sorted({p[0] for p in pts}):
        v = [p[1] for p in pts if p[0] == r]
        out.append(f"| {r} | {len(v)} | {np.median(v):.0f} | "
                   f"{np.mean([p[2] for p in pts if p[0] == r]):.1f} |")
    out += ["", f"Least squares: {a:.0f} B + {b:.1f} B a rank, a case (iterations {iters[0]}-{iters[-1]}). "
            f"At {ranks:,} ranks ({hosts:,} hosts x 8): {per / 1e6:.2f} MB a case; every host pair, 3 sizes: "
            f"{every / 1e9:.1f} GB; --max-rounds 64, 3 sizes: {sample / 1e9:.2f} GB."]
    return out


def fleet_schedule_table(cells, med, hosts=1024, timed_s=0.1):
    """The schedule at `hosts` hosts (host-rounds, all rails of a host pair at once) if a case
    cost timed_s of timed work plus what each cell measured beside it."""
    steps = lambda mr: schedule.steps("host-rounds", 0, hosts=hosts, max_rounds=mr)  # noqa: E731
    out = ["", f"The schedule at {hosts:,} hosts (--pattern host-rounds) if every case cost {timed_s:g} s of timed "
           "work plus what the cell measured beside it (beside_timed), minutes:", "",
           "| hosts | Mbit/s | s a case | all pairs, 3 sizes | all pairs, 1 size | --max-rounds 64, 3 sizes |",
           "| --- | --- | --- | --- | --- | --- |"]
    for (n, rate, _), cs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        per = timed_s + med([float(c["scale.case_s.beside_timed_median"]) for c in cs])
        out.append(f"| {n} | {rate} | {per:.3f} | {steps(0) * 3 * per / 60:.1f} | {steps(0) * per / 60:.1f} | "
                   f"{steps(64) * 3 * per / 60:.1f} |")
    return out


def retest_table(rows):
    """The retests' verdicts (validate --retest auto), per cell: parts by state, and the
    trials where a healthy host's part was convicted."""
    cells = {}
    for r in rows:
        if "retest" in r and "--retest auto" in r.get("validate_args", ""):
            cells.setdefault((r["hosts"], r["transport"], r["class"], r["severity"]), []).append(r)
    if not cells:
        return []
    out = ["", "The retests (validate --retest auto): parts retested by verdict, over the cell's trials", "",
           "| hosts | transport | fault | severity % | trials | trials with retests | convicted | cleared | "
           "explained | unresolved |", "| --- " * 10 + "|"]
    for (n, tr, cls, sev), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][2], str(kv[0][3] or 0))):
        count = {k: sum(1 for r in rs for _, st in r["retest"] if st == k)
                 for k in ("convicted", "cleared", "explained", "unresolved")}
        out.append(f"| {n} | {tr} | {cls} | {sev if sev is not None else '-'} | {len(rs)} | "
                   f"{sum(1 for r in rs if r['retest'])} | " + " | ".join(str(v) for v in count.values()) + " |")
    return out


def noise_floor(path, trial_root="/tmp/gdr-measure-validate"):
    """Per healthy trial whose run file is still in trial_root: the robust sd (MAD x 1.4826) of
    log(link median time / its group's median), per group (size), in percent."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))
    import numpy as np
    from gdranalysis.schema import load_run
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    seen, out = {}, {}
    for r in rows:
        seq = r.get("seq", seen.get((r["hosts"], r["transport"]), 0))
        seen[(r["hosts"], r["transport"])] = seq + 1
        h5 = os.path.join(trial_root, f"{r['hosts']}-{seq}", "run1.h5")
        if r["class"] != "healthy" or "error" in r or not os.path.exists(h5):
            continue
        groups = {}
        for c in load_run(h5).cases:
            med = c.rank_medians()
            groups.setdefault(c.attrs["bytes"], []).extend(np.log(med[s]) for s, _ in c.links() if med[s] > 0)
        for b, v in groups.items():
            v = np.array(v)
            out.setdefault((r["hosts"], r["transport"], b), []).append(
                100 * 1.4826 * float(np.median(np.abs(v - np.median(v)))))
    lines = ["| hosts | transport | size | healthy runs | robust sd of link times, % (median, max over runs) |",
             "| --- | --- | --- | --- | --- |"]
    for (n, tr, b), v in sorted(out.items()):
        lines.append(f"| {n} | {tr} | {b // 1024}K | {len(v)} | {np.median(v):.2f}, {max(v):.2f} |")
    return lines


# ---- generated faults (--gen) ----

def fault_effects(fault, t_start):
    """What the applied fault did, read back: the loss rules' counters of each lossy host, and the
    background jobs' logged changes of rate (flap, stall, at) since t_start (epoch seconds)."""
    out = {}
    for f in fault["faults"]:
        if f["class"] == "loss":
            out.setdefault("loss_counters", []).extend(x for x in sh(FAULT, "counters", f["host"], check=False).split("\n") if x)
    jobs = f"/run/gdrcluster/{NAME}/jobs"
    for fn in sorted(os.listdir(jobs)) if os.path.isdir(jobs) else []:
        if not fn.endswith(".log"):
            continue
        ev = []
        for ln in open(os.path.join(jobs, fn), encoding="utf-8").read().splitlines():
            t, _, what = ln.partition(" ")
            try:   # the jobs' own lines start with the time; what a command they ran printed does not
                t = float(t)
            except ValueError:
                continue
            if t >= t_start - 1:
                ev.append((round(t - t_start, 2), what))
        if ev:
            out.setdefault("jobs", {})[fn[:-4]] = ev
    flap = [v for k, v in out.get("jobs", {}).items() if k.startswith("flap-")]
    if flap:   # the share of time slow, measured from the logged changes
        slow = tot = 0.0
        for ev in flap:
            for (t0, w0), (t1, _) in zip(ev, ev[1:]):
                tot += t1 - t0
                slow += (t1 - t0) if w0.startswith("slow") else 0.0
        out["flap_slow_share"] = round(slow / tot, 3) if tot else None
    return out


def judge_gen(fault, doc):
    status = {v["host"]: v["status"] for v in doc["verdicts"]}
    named = {h for h, st in status.items() if st in ("suspect", "failed")}
    bad = set(fault["bad_hosts"])
    classes = sorted({f"{f['hosts'][0] if len(f['hosts']) == 1 else '-'.join(f['hosts'])}: {f['cls']}"
                      for f in doc["findings"] if f.get("cls")})   # where validate's findings carry a class
    return {"named": sorted(named), "bad_named": sorted(named & bad), "wrong_hosts": sorted(named - bad),
            "status": status, "classes_named": classes}


def gen_trial(a, hosts, cls, seed, seq):
    out = f"/tmp/gdr-measure-validate/gen-{seq}"
    subprocess.run(["rm", "-rf", out])
    sh(FAULT, "clear", check=False)
    sh(CLUSTER, "reap", check=False)
    fault = fault_gen.draw(seed, hosts, cls, a.run_s)
    t_start = time.time()
    try:
        applied = fault_gen.apply(fault, env=ENV)
    except fault_gen.CannotApply as e:
        sh(FAULT, "clear", check=False)
        return fault, {"error": f"not applied: {e}"}
    p, took = run_validate(a, hosts, out)
    try:
        effects = fault_effects(fault, t_start)
    except (OSError, ValueError, RuntimeError) as e:   # a reading that failed loses the reading, not the trial
        effects = {"error": str(e)}
    sh(FAULT, "clear", check=False)
    sh(CLUSTER, "reap", check=False)
    r = {"applied": applied, "effects": effects, "took_s": round(took, 1)}
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        r["error"] = f"validate exit {p.returncode}: {p.stderr.strip()[-400:]}"
        return fault, r
    r.update(judge_gen(fault, doc))
    r.update({"exit": p.returncode, "findings": doc["findings"], "elapsed_s": doc["elapsed_s"],
              "budget_s": doc["budget_s"], "notes": doc["notes"]})
    return fault, r


def run_gen(a, nhosts, classes, deadline, outf):
    sh(CLUSTER, "down", check=False)
    sh(CLUSTER, "up", str(nhosts), str(a.rate))
    hosts = [f"{NAME}{i}" for i in range(1, nhosts + 1)]
    load0 = os.getloadavg()
    try:
        order = [(c, t) for t in range(a.trials) for c in classes]   # interleaved: drift hits every class alike
        seq = 0
        for cls, t in order:
            seed = int.from_bytes(os.urandom(8), "big")   # drawn, not picked; recorded
            for rerun in range(2 if a.rerun else 1):
                if time.monotonic() > deadline:
                    print(f"time limit reached at {nhosts} hosts, trial {seq}", flush=True)
                    return False
                fault, r = gen_trial(a, hosts, cls, seed, f"{nhosts}-{seq}")
                rec = {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hosts": nhosts, "seq": seq,
                       "rate_mbit": a.rate, "transport": a.transport, "validate_args": a.validate_args,
                       "min_slowdown": a.min_slowdown, "class": cls, "trial": t, "rerun": rerun, "seed": seed,
                       "fault": fault, "load": [round(x, 2) for x in os.getloadavg()], "load_at_start": load0, **r}
                outf.write(json.dumps(rec) + "\n")
                outf.flush()
                seq += 1
                print(f"{nhosts} hosts {cls} #{t}{'r' if rerun else ''} seed {seed}: bad {fault['bad_hosts']} "
                      f"named {r.get('named')} classes {r.get('classes_named')} {r.get('elapsed_s')} s "
                      f"load {rec['load'][0]} {r.get('error', '')}", flush=True)
        return True
    finally:
        sh(FAULT, "clear", check=False)
        sh(CLUSTER, "down", check=False)


def trial_line(r):
    """One run of a --gen file in a line."""
    e = r.get("effects") or {}
    did = []
    for c in e.get("loss_counters", []):
        w = c.split()
        if "dropped" in w:
            did.append(f"{w[1]} {w[-2].lstrip('(')} % dropped of {int(w[3]) + int(w[5])}")
    if e.get("flap_slow_share") is not None:
        did.append(f"slow {100 * e['flap_slow_share']:.0f} % of the time")
    st = e.get("jobs", {}).get("stall")
    if st:
        t = {w.split()[0]: at for at, w in st}
        did.append(f"stall {t.get('slow', '?')}-{t.get('full', '?')} s")
    cmds = "; ".join(" ".join(c) for c in r["fault"]["commands"])
    return (f"- {r['hosts']} hosts {r['class']}{' (rerun)' if r.get('rerun') else ''} seed {r['seed']}: {cmds} | "
            f"{', '.join(did) or '-'} | bad {','.join(r['fault']['bad_hosts']) or 'none'} | "
            + (f"not run: {r['error']}" if "error" in r else
               f"named {','.join(r['named']) or 'none'}{' ' + ', '.join(r['classes_named']) if r.get('classes_named') else ''}"
               f", exit {r['exit']}, {r['elapsed_s']} s, load {r['load'][0]}"))


def summarize_gen(path):
    """The per-class table (.txt) and rows (.json) of a --gen file. Intervals: intervals.wilson, the
    same as scipy.stats.binomtest(k, n).proportion_ci(method="wilson") (checked to 4 places)."""
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    cells = {}
    for r in rows:
        cells.setdefault((r["hosts"], r["transport"], r["class"]), []).append(r)
    table = []
    for (n, tr, cls), rs in sorted(cells.items()):
        ok = [r for r in rs if "error" not in r]
        first = [r for r in ok if not r.get("rerun")]
        bad = sum(len(r["fault"]["bad_hosts"]) for r in first)
        bad_named = sum(len(r["bad_named"]) for r in first)
        every = sum(1 for r in first if set(r["bad_named"]) == set(r["fault"]["bad_hosts"]))
        judged = sum(n - len(r["fault"]["bad_hosts"]) for r in first)
        wrong = sum(len(r["wrong_hosts"]) for r in first)
        clean = sum(1 for r in first if not r["wrong_hosts"])
        same, tot = rerun_agreement(ok, lambda r: r["seed"])
        el = sorted(r["elapsed_s"] for r in ok)
        named_cls = sorted({c.split(": ", 1)[1] for r in first for c in r.get("classes_named", [])})
        row = {"hosts": n, "transport": tr, "class": cls, "trials": len(first),
               "errors": sum(1 for r in rs if "error" in r and not r.get("rerun")),
               "bad_hosts": bad, "bad_named": bad_named, "recall": bad_named / bad if bad else None,
               "recall_ci": list(wilson(bad_named, bad)) if bad else None, "trials_every_bad_named": every,
               "healthy_judged": judged, "healthy_named": wrong, "healthy_rate": wrong / judged if judged else None,
               "healthy_rate_ci": list(wilson(wrong, judged)) if judged else None, "trials_no_healthy_named": clean,
               "rerun_same": same, "rerun_hosts": tot, "rerun_agree": same / tot if tot else None,
               "rerun_ci": list(wilson(same, tot)) if tot else None, "classes_named": named_cls,
               "elapsed_median_s": el[len(el) // 2] if el else None, "elapsed_max_s": el[-1] if el else None,
               "budget_s": ok[0]["budget_s"] if ok else None}
        table.append(row)
    loads = [r["load"][0] for r in rows if r.get("load")]
    ci = lambda c: f"[{c[0]:.2f}, {c[1]:.2f}]" if c else ""  # noqa: E731
    out = [f"# {os.path.basename(path)}: {len(rows)} runs of gdrbench validate on generated faults (fault_gen.py)",
           "# recall: bad hosts named (suspect or failed) of bad hosts; healthy rate: healthy hosts named of healthy "
           "hosts judged; rerun: hosts with the same verdict on the same seed; intervals: Wilson 95 %",
           f"# load (1 min) at the trials' ends: {min(loads):.1f}-{max(loads):.1f}" if loads else "#",
           "| hosts | transport | class | trials | recall [95 % CI] | every bad host named | healthy named "
           "[95 % CI] | trials naming no healthy host | rerun agree | classes validate gave | elapsed s "
           "(median, max) / budget |", "| --- " * 11 + "|"]
    for t in table:
        rec = "-" if t["recall"] is None else f"{t['bad_named']}/{t['bad_hosts']} = {t['recall']:.2f} {ci(t['recall_ci'])}"
        hr = "-" if t["healthy_rate"] is None else (f"{t['healthy_named']}/{t['healthy_judged']} = "
                                                     f"{t['healthy_rate']:.3f} {ci(t['healthy_rate_ci'])}")
        rr = "-" if t["rerun_agree"] is None else f"{t['rerun_same']}/{t['rerun_hosts']} {ci(t['rerun_ci'])}"
        errs = f" ({t['errors']} errors)" if t["errors"] else ""
        out.append(f"| {t['hosts']} | {t['transport']} | {t['class']} | {t['trials']}{errs} | {rec} | "
                   f"{str(t['trials_every_bad_named']) + '/' + str(t['trials']) if t['bad_hosts'] else '-'} | {hr} | {t['trials_no_healthy_named']}/{t['trials']} | "
                   f"{rr} | {', '.join(t['classes_named']) or '-'} | {t['elapsed_median_s']}, {t['elapsed_max_s']} / "
                   f"{t['budget_s']} |")
    out += ["", "Each run: the fault drawn (fault.sh commands), what it did (loss: the rules' counters; flap: "
            "its share of time slow by its log; stall: its window, seconds from the fault's start), the hosts named:",
            ""] + [trial_line(r) for r in rows]
    base = path[:-len(".jsonl")] if path.endswith(".jsonl") else path
    with open(base + ".txt", "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    with open(base + ".json", "w", encoding="utf-8") as f:
        json.dump(table, f, indent=1)
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gdrbench", default=os.path.join(HERE, "..", "..", "build", "gdrbench"))
    ap.add_argument("--hosts", default="4", help="comma list of host counts")
    ap.add_argument("--cells", default="healthy,link:10,link:25,nic-both:10")
    ap.add_argument("--trials", type=int, default=10, help="per cell and host count (pairs: even is best)")
    ap.add_argument("--time-limit", type=float, default=1800, help="seconds for the whole loop")
    ap.add_argument("--validate-args", default="--min-bytes 32K --max-bytes 128K --window 2",
                    help="more validate arguments (default: sizes for 20 Mbit/s links)")
    ap.add_argument("--rate", type=int, default=20, help="Mbit/s of every host link, each way")
    ap.add_argument("--budget", help="validate --budget: SECONDS, or HOSTS:SECONDS,... (default: validate's own)")
    ap.add_argument("--min-slowdown", type=float, default=7.0)
    ap.add_argument("-T", "--transport", default="mpi")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "results", "archive",
                                                  time.strftime("%Y%m%d") + "_cluster_validate-error-rates.jsonl"))
    ap.add_argument("--gen", metavar="CLASSES", help="generated faults instead of --cells: a comma list of "
                    f"fault_gen.py's classes ({','.join(fault_gen.CLASSES)}), --trials each")
    ap.add_argument("--rerun", action="store_true", help="with --gen: run each drawn fault twice (agreement)")
    ap.add_argument("--run-s", type=float, default=24.0, help="with --gen: the run's length for fault_gen.py "
                    "(onsets, stall windows), seconds")
    ap.add_argument("--summarize", metavar="JSONL", help="only write the summary of this file")
    ap.add_argument("--noise", metavar="JSONL", help="only the noise floor of its healthy trials whose run "
                    "files are still in /tmp/gdr-measure-validate (written beside it as _noise.txt)")
    a = ap.parse_args()
    if a.summarize:
        gen = any('"fault": {' in line for line in open(a.summarize, encoding="utf-8"))
        summarize_gen(a.summarize) if gen else summarize(a.summarize)
        return 0
    if a.noise:
        txt = a.noise[:-len(".jsonl")] + "_noise.txt"
        lines = noise_floor(a.noise)
        with open(txt, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    if a.trials < 1 or a.trials > 200 or not 0 < a.time_limit <= 4 * 3600:
        print("measure_validate.py: --trials 1-200 and --time-limit up to 4 h", file=sys.stderr)
        return 2
    if a.gen and (bad := [c for c in a.gen.split(",") if c not in fault_gen.CLASSES]):
        print(f"measure_validate.py: --gen {','.join(bad)}: not a class ({','.join(fault_gen.CLASSES)})",
              file=sys.stderr)
        return 2
    a.gdrbench = os.path.abspath(a.gdrbench)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # so that `finally` takes the cluster down
    rng = random.Random(a.seed)
    deadline = time.monotonic() + a.time_limit
    if a.gen and a.out.endswith("_cluster_validate-error-rates.jsonl"):
        a.out = a.out.replace("_cluster_validate-error-rates", "_cluster_validate-by-fault-class")
    with open(a.out, "a", encoding="utf-8") as outf:
        for n in (int(x) for x in a.hosts.split(",")):
            if a.gen:
                if not run_gen(a, n, a.gen.split(","), deadline, outf):
                    break
            elif not run_cells(a, n, a.cells.split(","), rng, deadline, outf):
                break
    summarize_gen(a.out) if a.gen else summarize(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
