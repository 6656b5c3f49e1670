"""`gdrbench simulate`: how often validate's verdict is wrong on fleets this
machine cannot hold, from a noise model fitted to real runs.

  simulate fit FILE[:HOST,HOST]... -o MODEL.json
      fit the noise model (sim_noise.py) to real bw rounds files; the hosts
      after a colon are a fault's target, whose links are left out
  simulate trials --noise MODEL.json|--noise-from FILE... --hosts 4,8 \\
      --cells healthy,link:10,nic-both:25 --trials 20 --out RATES.jsonl
      write the files N simulated hosts would write (sim_files.py), judge
      each with the code validate judges with (suspects.analyze, the factor
      model and validate_verdict), and give recall and the host false-positive rate
      per cell with Wilson 95 % intervals, as jobs/cluster/measure_validate.py
      does for the emulated cluster
  simulate fleet ...   (sim_fleet.py) the same at 64-4,096 hosts

Cells: healthy; link:PCT; nic-egress|nic-ingress|nic-both:PCT; rank:PCT (one
rank's links both ways: a slow GPU, PCIe or CPU); down; flap:PCT (a host PCT %
slower both ways for 30-50 % of the time, 2.5-8.5 cases a cycle, phase drawn);
tail:PCT (PCT % of a host's transfers 1.5-9x: a lossy port); stall:PCT (1-4
consecutive cases, every link PCT % slower: nobody's fault). Everything a
fault needs beyond its class and severity is drawn from --seed.
"""

from __future__ import annotations

import json
import os
import tempfile
import time

import numpy as np

from . import numbers
from .inputs import file_name
from .intervals import wilson
from .sim_files import Fault, write_run
from .sim_common import fit_files, load_model, parse_cells, parse_hosts
from .sim_fleet import add_parser as add_fleet
from .suspects import analyze
from .factor_model import attribute
from .validate_verdict import host_verdicts, model_findings

def pick(cls, pct, hosts, rpg, rng):
    """A fault's target; never the first host (mpirun and validate run there, as on the cluster)."""
    if cls == "healthy":
        return Fault("healthy")
    if cls == "link":
        t = rng.choice(len(hosts) - 1, size=2, replace=False) + 1
        return Fault(cls, pct, tuple(hosts[i] for i in sorted(t)))
    if cls == "stall":
        start, n = int(rng.integers(0, 12)), int(rng.integers(1, 5))
        return Fault(cls, pct, (), steps=tuple(range(start, start + n)))
    h = hosts[int(rng.integers(1, len(hosts)))]
    if cls == "flap":
        period = float(rng.uniform(2.5, 8.5))
        return Fault(cls, pct, (h,), period=period, duty=float(rng.uniform(0.3, 0.5)),
                     phase=float(rng.uniform(0, period)))
    if cls == "rank":
        return Fault(cls, pct, (h, int(rng.integers(0, rpg))))
    return Fault(cls, pct, (h,))


CLASS_OF = {"flap": "intermittent", "tail": "lossy tail"}   # the model's class for a fault in time


def score(fault, status, findings, steps=0):
    """As measure_validate.judge: found (the faulty part named as what it is; flap and tail: its
    host named with the class, stall: step-wide steps reported and no host named), wrong (hosts
    named that are not the fault's), whole-host-wrong (a link fault named as a host)."""
    named = {h for h, s in status.items() if s != "healthy"}
    target = set(fault.target[:1] if fault.cls == "rank" else fault.target)
    wrong = sorted(named - target)
    if fault.cls == "healthy":
        found = None
    elif fault.cls == "stall":
        found = steps > 0 and not named
    elif fault.cls in CLASS_OF:
        found = any(f.cls == CLASS_OF[fault.cls] and f.hosts == fault.target[:1] for f in findings)
    elif fault.cls == "link":
        found = any(f.kind == "link" and sorted(f.hosts) == sorted(fault.target) for f in findings)
    elif fault.cls == "down":
        found = status.get(fault.target[0]) == "failed"
    else:
        found = status.get(fault.target[0]) == "suspect"
    whole = fault.cls == "link" and any(not f.kind.startswith("link") and set(f.hosts) & target for f in findings)
    return found, wrong, whole


def trial(model, nhosts, rpg, fault, rng, workdir, judge_args):
    """One simulated validate: write the file, judge it. A down host answers no roll call: it is
    failed from the launcher's output (as validate.died_in), the others judged without it."""
    from .schema import load_run
    hosts = [f"sim{i + 1}" for i in range(nhosts)]
    ran = [h for h in hosts if not (fault.cls == "down" and h == fault.target[0])]
    path = os.path.join(workdir, "run.h5")
    write_run(path, model, ran, rpg, fault if fault.cls != "down" else Fault("healthy"), rng)
    run = load_run(path)    # with its iterations, as validate reads a run of this size
    rep = analyze(run, **judge_args)
    att = attribute(run, **judge_args)
    findings = model_findings(att, rep, run)
    failed = {h: "did not answer the roll call" for h in hosts if h not in ran}
    verdicts = host_verdicts(hosts, findings, failed, {})
    status = {v.host: v.status for v in verdicts}
    found, wrong, whole = score(fault, status, findings, len(att.steps))
    return {"hosts": nhosts, "ranks_per_host": rpg, "class": fault.cls, "severity": fault.pct or None,
            "target": list(map(str, fault.target)), "found": found, "wrong_hosts": wrong,
            "whole_host_wrong": whole, "judged": rep.judged, "outliers": rep.outliers,
            "findings": [{"kind": f.kind, "cls": f.cls, "side": f.side, "hosts": list(f.hosts), "slower": f.slower}
                         for f in findings], "step_wide": len(att.steps),
            "status": status}


def summarize(rows):
    cells = {}
    for r in rows:
        cells.setdefault((r["hosts"], r["ranks_per_host"], r["class"], r["severity"] or 0.0), []).append(r)
    out = []
    for (h, g, cls, sev), rs in sorted(cells.items()):
        judged = [r for r in rs if r["found"] is not None]
        k = sum(bool(r["found"]) for r in judged)
        tgt = 0 if cls in ("healthy", "stall") else (2 if cls == "link" else 1)
        wrong = sum(len(r["wrong_hosts"]) for r in rs)
        per = len(rs) * (h - tgt)
        out.append({"hosts": h, "ranks_per_host": g, "class": cls, "severity": sev or None, "trials": len(rs),
                    "found": k if judged else None, "recall": k / len(judged) if judged else None,
                    "recall_ci": wilson(k, len(judged)) if judged else None, "wrong_hosts": wrong,
                    "hosts_judged": per, "host_fp": wrong / per if per else None, "host_fp_ci": wilson(wrong, per),
                    "whole_host_wrong": sum(r["whole_host_wrong"] for r in rs)})
    return out


def format_summary(cells, title):
    def ci(c):
        return f"[{c[0]:.3f}, {c[1]:.3f}]"
    out = [f"# {title}",
           "| hosts | ranks/host | fault | severity % | trials | recall [95 % CI] | wrong hosts | "
           "host FP rate [95 % CI] | whole-host wrong (link) |", "| --- " * 9 + "|"]
    for c in cells:
        rec = "-" if c["recall"] is None else f"{c['found']}/{c['trials']} = {c['recall']:.2f} {ci(c['recall_ci'])}"
        out.append(f"| {c['hosts']} | {c['ranks_per_host']} | {c['class']} | {c['severity'] or '-'} | {c['trials']} | "
                   f"{rec} | {c['wrong_hosts']}/{c['hosts_judged']} | {c['host_fp']:.4f} {ci(c['host_fp_ci'])} | "
                   f"{c['whole_host_wrong'] if c['class'] == 'link' else '-'} |")
    return "\n".join(out)


def _file_args(files):
    """The paths of FILE[:HOST,...] arguments, both readings of a ':'."""
    return [p for f in files for p in (f, f.rsplit(":", 1)[0])]


def cmd_fit(a):
    from . import outputs
    outputs.check(a.output, "-o", _file_args(a.files), a.force)  # before the work, not after
    m = fit_files(a.files)
    outputs.write(a.output, json.dumps(m.as_dict(), indent=1), "-o", _file_args(a.files), a.force)
    print(f"# noise model of {len(m.sources)} files, {m.links} (link, size) residuals: persistent sd "
          f"{100 * m.persist_sd:.2f}%, per-size sd {100 * m.size_sd:.2f}%, tail p {m.tail_p:.3f} -> {a.output}")
    return 0


def cmd_trials(a):
    cells = parse_cells(a.cells)
    hosts = parse_hosts(a.hosts, name="simulate trials --hosts")
    for h in hosts:
        numbers.check(h * a.ranks_per_host, "simulate trials ranks", source="--hosts x --ranks-per-host")
    model = load_model(a)
    rng = np.random.default_rng(a.seed)
    judge_args = {"z": a.z, "min_slowdown_pct": a.min_slowdown, "p0": a.p0, "alpha": a.alpha}
    rows, t0 = [], time.monotonic()
    from . import outputs
    out = outputs.open_append(a.out, "--out", _file_args(a.noise_from or [a.noise])) if a.out else None
    with tempfile.TemporaryDirectory(prefix="gdr-sim-") as wd:
        for h in hosts:
            for cls, pct in cells:
                for _ in range(a.trials):
                    r = trial(model, h, a.ranks_per_host, pick(cls, pct, [f"sim{i + 1}" for i in range(h)],
                                                               a.ranks_per_host, rng), rng, wd, judge_args)
                    r.update(seed=a.seed, noise=model.sources if len(model.sources) < 8 else len(model.sources),
                             min_slowdown=a.min_slowdown, p0=a.p0)
                    rows.append(r)
                    if out:
                        out.write(json.dumps(r) + "\n")
    if out:
        out.close()
    summary = summarize(rows)
    if a.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_summary(summary, f"{len(rows)} simulated validate runs in {time.monotonic() - t0:.1f} s, "
                             f"noise of {len(model.sources)} real files; seed {a.seed}"))
    return 0


def add_parser(sub):
    s = sub.add_parser("simulate", help="simulated fleets: validate's error rates from a fitted noise model",
                       description=__doc__.split("\n\n")[0])
    ss = s.add_subparsers(dest="action", required=True)
    f = ss.add_parser("fit", help="fit the noise model to real bw rounds files")
    f.add_argument("files", type=file_name, nargs="+", metavar="FILE[:HOST,...]")
    f.add_argument("-o", "--output", type=file_name, required=True, help="the model, JSON (written whole: docs/operators/outputs.md)")
    f.add_argument("--force", action="store_true", help="replace an existing -o file")
    f.set_defaults(func=cmd_fit)
    t = ss.add_parser("trials", help="simulated validate runs per fault cell; recall and host FP rate")
    _common(t)
    t.add_argument("--hosts", default="4", help="host counts, comma-separated (default 4)")
    t.add_argument("--cells", default="healthy,link:10,link:25,nic-both:10", help="fault cells (module doc)")
    t.add_argument("--trials", type=numbers.arg("simulate --trials"), default=10, help="per host count and cell (default 10)")
    t.add_argument("--out", type=file_name, help="append one JSON line per trial here")
    t.add_argument("--json", action="store_true", help="print the summary as JSON")
    t.set_defaults(func=cmd_trials)
    add_fleet(ss, _common)


def _common(p):
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--noise", type=file_name, metavar="MODEL.json", help="a model `simulate fit` wrote")
    g.add_argument("--noise-from", type=file_name, nargs="+", metavar="FILE[:HOST,...]", help="fit it here to these real files")
    p.add_argument("--ranks-per-host", type=numbers.arg("simulate --ranks-per-host"), default=1, help="ranks (GPUs) per host (default 1)")
    p.add_argument("--seed", type=numbers.arg("simulate --seed"), default=1)
    p.add_argument("--z", type=numbers.arg("simulate --z"), default=5.0, help="as validate (default 5)")
    p.add_argument("--min-slowdown", type=numbers.arg("simulate --min-slowdown"), default=7.0, help="as validate, percent (default 7)")
    p.add_argument("--p0", type=numbers.arg("simulate --p0"), default=0.01, help="as validate (default 0.01)")
    p.add_argument("--alpha", type=numbers.arg("simulate --alpha"), default=1e-3,
                   help="as suspects (default 1e-3); 2e-6 with 3 sizes at p0 0.01: a link must be an outlier in all 3")
