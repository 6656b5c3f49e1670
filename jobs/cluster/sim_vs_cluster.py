#!/usr/bin/python3
"""Does `gdrbench simulate` agree with the emulated cluster? Per host count of
measure_validate.py's trials (its JSONL and the run1.h5 each trial's
validate wrote), fit the noise model to that host count's real files (links
of a fault's target left out; down/freeze runs are partial and skipped),
simulate the same fault cells, and set the rates side by side with Wilson
95 % intervals and Fisher's exact test (real vs simulated).

  jobs/cluster/sim_vs_cluster.py --real results/archive/20261203_cluster_validate-error-rates.jsonl \\
      --runs /tmp/gdr-measure-validate --trials 40 --out results/archive/20261203_sim-vs-cluster \\
      --archive-runs runs.tar.gz
  jobs/cluster/sim_vs_cluster.py --real ... --runs-archive runs.tar.gz --out ...   (again, from the archive)

Writes OUT.txt (the table), OUT.jsonl (the simulated trials) and
OUT-noise-<H>h.json (the fitted models).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "results"))

import numpy as np  # noqa: E402
from scipy.stats import fisher_exact  # noqa: E402

from gdranalysis.sim_noise import fit  # noqa: E402
from gdranalysis.intervals import wilson  # noqa: E402
from gdranalysis.simulate import pick, trial  # noqa: E402

FIT_CLASSES = ("healthy", "link", "nic-both", "nic-egress", "nic-ingress", "cpu")
# the emulated cluster's cpu fault (a CPU quota) makes a rank several times slower: rank:100 here
SIM_CELL = {"cpu": ("rank", 100.0), "freeze": ("down", 0.0)}


def run_id(r):
    return f"{r['hosts']}-{r.get('transport', 'mpi')}-{r['utc'].replace(':', '').replace('-', '')}"


def real_rows(jsonl, runs_dir):
    """Rows of measure_validate's JSONL whose run1.h5 is still the one that trial wrote (same
    elapsed: a later invocation reuses the folder names)."""
    out = []
    for line in open(jsonl):
        r = json.loads(line)
        d = os.path.join(runs_dir, f"{r['hosts']}-{r['seq']}")
        try:
            v = json.load(open(os.path.join(d, "validate.json")))
        except (OSError, ValueError):
            v = None
        r["file"] = os.path.join(d, "run1.h5")
        r["file_ok"] = bool(v) and abs(v.get("elapsed_s", -1) - r["elapsed_s"]) < 0.05 and os.path.exists(r["file"])
        out.append(r)
    return out


def from_tar(path, tmp):
    with tarfile.open(path) as t:
        t.extractall(tmp)
    rows = [json.loads(x) for x in open(os.path.join(tmp, "runs", "manifest.jsonl"))]
    for r in rows:
        r["file"] = os.path.join(tmp, r["h5"] if "h5" in r else f"runs/{r['hosts']}-{r['seq']}.h5")
        r["file_ok"] = os.path.exists(r["file"])
    return rows


def collect(a, tmp):
    """The archived runs (--runs-archive), then the JSONL's rows whose file is still in --runs."""
    rows, seen = [], set()
    for i, t in enumerate(a.runs_archive or []):
        for r in from_tar(t, os.path.join(tmp, str(i))):
            if run_id(r) not in seen:
                seen.add(run_id(r))
                rows.append(r)
    if a.runs:
        for r in real_rows(a.real, a.runs):
            if run_id(r) in seen:
                continue
            seen.add(run_id(r))
            rows.append(r)
    return rows


def archive(rows, out):
    """The fitted runs' files and every row (down/freeze runs are partial: their rows only)."""
    with tarfile.open(out, "w:gz") as t:
        man = []
        for r in rows:
            m = {k: v for k, v in r.items() if k not in ("file", "file_ok", "h5")}
            if r["file_ok"] and r["class"] in FIT_CLASSES:
                m["h5"] = f"runs/{run_id(r)}.h5"
                t.add(r["file"], arcname=m["h5"])
            man.append(json.dumps(m) + "\n")
        data = "".join(man).encode()
        info = tarfile.TarInfo("runs/manifest.jsonl")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))


def cell_of(r):
    return (r["class"], r["severity"])


def rates(rows, nhosts):
    found = [r["found"] for r in rows if r["found"] is not None]
    tgt = {"healthy": 0, "link": 2}.get(rows[0]["class"], 1)
    wrong = sum(len(r["wrong_hosts"]) for r in rows)
    return sum(map(bool, found)), len(found), wrong, len(rows) * (nhosts - tgt)


def fmt(k, n):
    if n == 0:
        return "-"
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def fisher(k1, n1, k2, n2):
    if n1 == 0 or n2 == 0:
        return "-"
    return f"{fisher_exact([[k1, n1 - k1], [k2, n2 - k2]])[1]:.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--real", required=True, help="measure_validate.py's JSONL")
    p.add_argument("--runs", help="its --out folder of trials (folders are reused: only rows whose run1.h5 "
                   "still matches are used)")
    p.add_argument("--runs-archive", nargs="*", help="tar.gz files --archive-runs wrote (their rows first)")
    p.add_argument("--trials", type=int, default=40, help="simulated trials per cell (default 40)")
    p.add_argument("--seed", type=int, default=34)
    p.add_argument("--out", required=True, help="prefix of the files written")
    p.add_argument("--archive-runs", help="also write the real files used (and their rows) to this tar.gz")
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="gdr-simvs-")
    rows = collect(a, tmp)
    if a.archive_runs:
        archive(rows, a.archive_runs)
    rng = np.random.default_rng(a.seed)
    lines = [f"# simulate vs the emulated cluster: real trials {os.path.basename(a.real)}, simulated {a.trials} "
             f"per cell (seed {a.seed}); noise fitted per host count to that count's real files; Wilson 95 %, "
             "Fisher exact p (real vs sim)",
             "| hosts | fault | severity % | real recall | sim recall | p | real host FP | sim host FP | p | "
             "real outliers/comparisons | sim outliers/comparisons | p |",
             "| --- " * 12 + "|"]
    with open(a.out + ".jsonl", "w") as out, tempfile.TemporaryDirectory(prefix="gdr-simvs-") as wd:
        for h, tr in sorted({(r["hosts"], r.get("transport", "mpi")) for r in rows}):
            mine = [r for r in rows if r["hosts"] == h and r.get("transport", "mpi") == tr]
            fitted = [r for r in mine if r["file_ok"] and r["class"] in FIT_CLASSES]
            model = fit([r["file"] for r in fitted], {r["file"]: r["target"] for r in fitted})
            model.sources = [run_id(r) for r in fitted]
            if len(fitted) < 2:
                continue
            with open(f"{a.out}-noise-{h}h-{tr}.json", "w") as f:
                json.dump(model.as_dict(), f, indent=1)
            lines.append(f"| {h} {tr} | noise: {len(fitted)} files, {model.links} residuals, persistent sd "
                         f"{100 * model.persist_sd:.2f}%, per-size sd {100 * model.size_sd:.2f}%, tail p "
                         f"{model.tail_p:.3f}, mean excess {100 * model.tail_excess:.2f}% | | | | | | | | | | |")
            hosts = [f"sim{i + 1}" for i in range(h)]
            for cell in sorted({cell_of(r) for r in mine}, key=str):
                real = [r for r in mine if cell_of(r) == cell]
                if isinstance(cell[1], str):  # link:down: found from the launcher's output, not the noise
                    rk, rn, rw, rj = rates(real, h)
                    lines.append(f"| {h} {tr} | {cell[0]} | {cell[1]} | {fmt(rk, rn)} | not simulated | | "
                                 f"{fmt(rw, rj)} | | | | | |")
                    continue
                cls, sev = SIM_CELL.get(cell[0], (cell[0], cell[1] or 0.0))
                sim = []
                for _ in range(a.trials):
                    s = trial(model, h, 1, pick(cls, sev, hosts, 1, rng), rng, wd,
                              {"z": 5.0, "min_slowdown_pct": real[0]["min_slowdown"], "p0": real[0]["p0"]})
                    s["real_cell"] = list(cell)
                    s["transport"] = tr
                    out.write(json.dumps(s) + "\n")
                    sim.append(s)
                rk, rn, rw, rj = rates(real, h)
                sk, sn, sw, sj = rates(sim, h)
                ro, rc = sum(r["outliers"] for r in real), sum(r["judged"] for r in real)
                so, sc = sum(r["outliers"] for r in sim), sum(r["judged"] for r in sim)
                lines.append(f"| {h} {tr} | {cell[0]} | {cell[1] or '-'} | {fmt(rk, rn)} | {fmt(sk, sn)} | "
                             f"{fisher(rk, rn, sk, sn)} | {fmt(rw, rj)} | {fmt(sw, sj)} | {fisher(rw, rj, sw, sj)} | "
                             f"{fmt(ro, rc)} | {fmt(so, sc)} | {fisher(ro, rc, so, sc)} |")
                print(lines[-1], flush=True)
    with open(a.out + ".txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
