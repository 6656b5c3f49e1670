#!/usr/bin/python3
"""How often is `gdrbench baseline` wrong? Its change-point rule, measured on
the emulated cluster's archived validate runs (real runs, one file each, the
manifest says which fault each had and on which hosts).

- False positives: per item (link, host as sender or receiver), the runs in
  which no fault touched it, oldest first: after each run past --min-runs,
  would `baseline` on the archive up to that run report it? Counted per
  item-run judged and per item (reported at least once).
- Recall: per item a fault targeted (a link fault: its two links; a NIC:
  the host's side and its links; a CPU quota: the host), its untouched runs
  as its past, then 1, 2 or 3 of its faulted runs of one class and severity:
  is it reported after them, and how far below its past does it say it is?
  The past is every untouched run, also those after the fault in wall-clock
  time (the cluster's runs interleave fault classes run by run).

  jobs/cluster/measure_baseline.py --runs-archive results/archive/20261203_cluster_validate-runs.tar.xz \\
      --out results/archive/20261203_baseline-changepoints

Writes OUT.jsonl (one row per cell: counts, rates, Wilson 95 % intervals) and
OUT.txt (the tables in results/archive/20261205_fleet-scale-measurement-log.txt,
"Each link against its own history"; summed up in docs/fleet-scale.md).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))

from gdranalysis import baseline as bl  # noqa: E402
from gdranalysis.intervals import wilson  # noqa: E402
from gdranalysis.schema import load_run  # noqa: E402

NIC = {"nic-egress": ("send",), "nic-ingress": ("recv",), "nic-both": ("send", "recv"), "cpu": ("send", "recv")}


def host_of(ep):
    return ep.split("/")[0]


def item_hosts(item):
    _, kind, what = item
    if kind == "link":
        a, b = what.split(">")
        return {host_of(a), host_of(b)}
    return {host_of(what)}


def targeted(item, row) -> bool:
    """Whether the fault of this run is on `item` (what it should report)."""
    _, kind, what = item
    cls, tgt = row["class"], set(row["target"])
    if cls == "link" and row["severity"] != "down" and kind == "link":
        return item_hosts(item) == tgt
    if cls in NIC and len(tgt) == 1:
        (t,) = tgt
        if kind == "link":
            a, b = (host_of(x) for x in what.split(">"))
            return ("send" in NIC[cls] and a == t) or ("recv" in NIC[cls] and b == t)
        return host_of(what) == t and kind.split("-")[1] in NIC[cls]
    return False


def load(runs_dir):
    rows = [json.loads(x) for x in open(os.path.join(runs_dir, "runs", "manifest.jsonl"))]
    rows = sorted((r for r in rows if r.get("h5")), key=lambda r: r["utc"])
    out = []
    for r in rows:
        try:
            run = load_run(os.path.join(runs_dir, r["h5"]))
        except Exception as e:  # noqa: BLE001 - a file that cannot be read is left out, and said
            print(f"left out {r['h5']}: {e}", file=sys.stderr)
            continue
        if run.status != "complete":
            print(f"left out {r['h5']}: status {run.status}", file=sys.stderr)
            continue
        out.append((r, bl.run_values(run)))
    return out


def level(kind):
    return "link" if kind == "link" else "host" if kind.startswith("host") else "gpu"


def measure(runs, p):
    """Rows per (hosts, transport, level): FP counts; per (hosts, transport, fault cell, level): recall."""
    cells = collections.defaultdict(list)
    for r, vals in runs:
        cells[(r["hosts"], r["transport"])].append((r, vals))
    out = []
    for (nh, tr), rs in sorted(cells.items()):
        healthy, faulted = collections.defaultdict(list), collections.defaultdict(list)
        for i, (r, vals) in enumerate(rs):
            for item, v in vals.items():
                if targeted(item, r):
                    faulted[(item, r["class"], r["severity"])].append((i, v))
                elif r["class"] == "healthy" or not (item_hosts(item) & set(r["target"])):
                    healthy[item].append((i, v))
        strict = collections.defaultdict(list)
        for i, (r, vals) in enumerate(rs):
            for item, v in vals.items():
                if r["class"] == "healthy":
                    strict[item].append((i, v))
        for name, ser in (("healthy runs", strict), ("untouched items", healthy)):
            out += false_positives(nh, tr, name, ser, len(rs), p)
        floors = bl.floors(healthy)
        out += recall(nh, tr, healthy, faulted, floors, p)
    return out


def false_positives(nh, tr, name, series, nruns, p):
    """Rows per level: item-runs judged and reported, items judged and ever reported."""
    floors = bl.floors(series)
    fp = collections.defaultdict(lambda: [0, 0, 0, 0])
    for item, pts in series.items():
        if len(pts) <= p.min_runs:
            continue
        rep = [bl.reported(s, p) for s in bl.cusum(pts, floors.get(item[:2], 0.0), p)[p.min_runs:]]
        c = fp[level(item[1])]
        c[0] += len(rep)
        c[1] += sum(rep)
        c[2] += 1
        c[3] += any(rep)
    return [{"hosts": nh, "transport": tr, "what": "healthy", "series": name, "level": lv, "item_runs": n,
             "reported": k, "rate": k / n, "ci": wilson(k, n), "items": ni, "items_ever": ki,
             "items_rate": ki / ni, "items_ci": wilson(ki, ni), "runs": max(len(v) for v in series.values()),
             "runs_in_cell": nruns} for lv, (n, k, ni, ki) in sorted(fp.items())]


def recall(nh, tr, healthy, faulted, floors, p):
    acc = collections.defaultdict(lambda: {1: [0, 0], 2: [0, 0], 3: [0, 0], "below": []})
    for (item, cls, sev), fpts in faulted.items():
        past = healthy.get(item, [])
        if len(past) < p.min_runs:
            continue
        a = acc[(cls, sev, level(item[1]))]
        for j, f in enumerate(fpts):
            for m in (1, 2, 3):
                if m > len(fpts):
                    continue
                tail = [fpts[(j + q) % len(fpts)] for q in range(m)]
                last = bl.cusum(past + tail, floors.get(item[:2], 0.0), p)[-1]
                a[m][0] += 1
                a[m][1] += bl.reported(last, p)
                if m == 2:
                    a["below"].append(last.pct_below)
    rows = []
    for (cls, sev, lv), a in sorted(acc.items(), key=str):
        row = {"hosts": nh, "transport": tr, "what": cls, "severity": sev, "level": lv}
        for m in (1, 2, 3):
            n, k = a[m]
            row[f"after_{m}"] = [k, n, wilson(k, n)]
        b = sorted(a["below"])
        row["pct_below_after_2"] = [b[0], b[len(b) // 2], b[-1]] if b else None
        rows.append(row)
    return rows


def fmt_ci(k, n, ci):
    return "-" if n == 0 else f"{k}/{n} [{ci[0]:.3f}, {ci[1]:.3f}]"


def table(rows, p, src):
    out = [f"{src}: gdrbench baseline's rule on the emulated cluster's archived runs "
           f"(--min-runs {p.min_runs}, k {p.k:g}, h {p.h:g}, clip {p.clip:g}, --min-drop {p.min_drop_pct:g} %); "
           "Wilson 95 %", "",
           "False positives, judged after each run past --min-runs: `healthy runs`: only the runs with no fault; "
           "`untouched items`: every run, the items its fault did not touch (their links still share the "
           "2 cores with a throttled one)",
           "", "| hosts | transport | series | level | runs (most per item) | item-runs judged | reported [95 % CI] | items ever reported [95 % CI] |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["what"] == "healthy":
            out.append(f"| {r['hosts']} | {r['transport']} | {r['series']} | {r['level']} | {r['runs']} | {r['item_runs']} | "
                       f"{fmt_ci(r['reported'], r['item_runs'], r['ci'])} | "
                       f"{fmt_ci(r['items_ever'], r['items'], r['items_ci'])} |")
    out += ["", "Recall: the targeted item, its untouched runs as its past, then 1, 2 or 3 faulted runs",
            "", "| hosts | transport | fault | severity % | level | after 1 run | after 2 runs | after 3 runs | "
            "reported below past after 2 runs, % (min, median, max) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["what"] != "healthy":
            b = r["pct_below_after_2"]
            out.append(f"| {r['hosts']} | {r['transport']} | {r['what']} | {r['severity']} | {r['level']} | "
                       + " | ".join(fmt_ci(*r[f"after_{m}"]) for m in (1, 2, 3))
                       + (f" | {b[0]:.1f}, {b[1]:.1f}, {b[2]:.1f} |" if b else " | - |"))
    return "\n".join(out) + "\n"


def sensitivity(runs, base):
    """The trade-off of --h and --min-drop: link false positives per link-run (every run, untouched
    links) and recall of the link faults after 2 and 3 runs, per host count."""
    out = ["", "Sensitivity (links only; FP: untouched items, per link-run; recall: link faults, after 2 / 3 runs)", "",
           "| --h | --min-drop % | FP 4 hosts | FP 8 hosts | FP 16 hosts | 4 hosts link 5 % | 4 hosts link 10 % | 8 hosts link 10 % |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for h in (5.0, 7.0, 9.0):
        for md in (2.0, 3.0):
            p = dataclasses.replace(base, h=h, min_drop_pct=md)
            rows = measure(runs, p)
            fp = {r["hosts"]: f"{r['reported']}/{r['item_runs']}" for r in rows
                  if r["what"] == "healthy" and r["level"] == "link" and r["series"] == "untouched items"}
            rc = {(r["hosts"], r["severity"]): f"{r['after_2'][0]}/{r['after_2'][1]}, {r['after_3'][0]}/{r['after_3'][1]}"
                  for r in rows if r["what"] == "link" and r["level"] == "link"}
            out.append(f"| {h:g} | {md:g} | {fp.get(4, '-')} | {fp.get(8, '-')} | {fp.get(16, '-')} | "
                       f"{rc.get((4, 5.0), '-')} | {rc.get((4, 10.0), '-')} | {rc.get((8, 10.0), '-')} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs-archive", required=True, help="the tar.gz of runs/ with manifest.jsonl")
    ap.add_argument("--out", required=True, help="OUT prefix: OUT.jsonl, OUT.txt")
    ap.add_argument("--min-runs", type=int, default=bl.DEFAULT_MIN_RUNS)
    ap.add_argument("--min-drop", type=float, default=bl.DEFAULT_MIN_DROP_PCT)
    a = ap.parse_args()
    p = bl.Params(min_runs=a.min_runs, min_drop_pct=a.min_drop)
    with tempfile.TemporaryDirectory(prefix="gdr-baseline-") as tmp:
        with tarfile.open(a.runs_archive) as t:
            t.extractall(tmp)
        runs = load(tmp)
    rows = measure(runs, p)
    with open(a.out + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    text = table(rows, p, os.path.basename(a.runs_archive)) + sensitivity(runs, p)
    with open(a.out + ".txt", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
