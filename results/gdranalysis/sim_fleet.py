"""`gdrbench simulate fleet`: predicted recall, host false-positive rate and
schedule time at 64-4,096 hosts x G GPUs.

A file of 4,096 hosts does not fit (the README's O(n^2) wall), and
suspects' per-link loop is O(links^2) in Python, so here the link medians
are drawn as matrices [sizes, H, H] (sim_noise: the same draws write_run
makes, less the iterations) and judged by `judge_matrix`, suspects' rule for
one rank per host written with arrays: each size a group; a link against all
links (z over max(MAD, the iteration floor)); the host link, the same value
against the others with the scale at least 1.7725 sd; each sender and
receiver (row and column medians) against the others; a suspect when its
outliers are at least the count P(X >= k) < alpha allows; a host named when
it is a suspect rank or every link from (or to) it is; a suspect link names
both its hosts unless one is named. The leave-one-out medians are taken
over all (at 64 hosts and more, 4,032 values or more: a shift below 1/4,000
of a quantile); `simulate fleet --check N` measures how often this judge
and the unchanged suspects + validate_verdict on files name the same hosts.

G GPUs per host run as G rail planes at once (GPU g of every host on NIC g,
rail-aligned): each plane is judged as H hosts with one rank each; a host is
named when any plane names it. A NIC fault is one rail of one host; a link
fault one rail between two hosts; a host fault (`nic-both` with --all-rails)
every rail. Schedule time: `--pattern host-rounds`, bw over H hosts, 2(H-1)
steps per size (2H for odd H), all rails of a host pair at once (schedule.py
counts the steps as collectives/host_rounds.cpp plans them; `--pattern rounds`
over 8H ranks is 8x longer, given beside it).
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

from . import inputs, numbers
from .schema import InputError
from .inputs import file_name
from .intervals import wilson
from . import schedule
from .sim_common import load_model, parse_cells, parse_hosts, wall_time_s
from .robust import median_se as _median_se

TABLE_MAX_BYTES = 256 << 20   # simulate fleet writes a few hundred bytes a row
HOSTLINK_SE = 1.7725   # suspects._host_blocks: a block of one link, sqrt(2) x 1.2533


def host_rounds_s(H, nsizes, case_time, max_rounds=0):
    """Schedule seconds of bw over `--pattern host-rounds` on H hosts (any GPUs per host)."""
    return schedule.schedule_s(schedule.steps("host-rounds", 0, hosts=H, max_rounds=max_rounds) * nsizes, case_time)


def scheduled(H, max_rounds):
    """[H, H] True where `host-rounds --max-rounds` tests the host pair (both ways); None: all pairs."""
    if not max_rounds or max_rounds >= schedule.rounds(H):
        return None
    m = np.zeros((H, H), bool)
    for r in range(max_rounds):
        for a, b in schedule.host_pairs(H, r):
            m[a, b] = m[b, a] = True
    return m


def min_outliers(m, p0, alpha):
    """The fewest outliers of m comparisons that make a suspect (suspects.analyze)."""
    from scipy.stats import binom
    for k in range(2, m + 1):
        if binom.sf(k - 1, m, p0) < alpha:
            return k
    return m + 1


def _robust(v):
    """Median and MAD x 1.4826 of a 1-D array without NaN (np.median partitions: fast)."""
    m = np.median(v)
    return m, 1.4826 * np.median(np.abs(v - m))


def iteration_floor(model, rng, k, links=201):
    """suspects' floor: the median over links of the standard error of a link's median."""
    se = [_median_se(model.draw_iterations(rng, k, 0.0, model.iters[k])) for _ in range(links)]
    return float(np.nanmedian(se))


def _row_medians(v, off, sched):
    """Each sender's (row's) median link; NaN for a host with no link tested."""
    if sched is None:
        H = v.shape[0]
        return np.median(v[off].reshape(H, H - 1), axis=1)
    with warnings.catch_warnings():  # a host resting in every round run: an all-NaN row
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(v, axis=1)


def judge_matrix(T, floors, z=5.0, min_slowdown_pct=7.0, p0=0.01, alpha=1e-3, sched=None):
    """T: [S, H, H] log link medians (NaN on the diagonal). sched: [H, H] pairs tested (None: all;
    `--max-rounds`). Returns the set of named host indices."""
    S, H, _ = T.shape
    lr = np.log1p(min_slowdown_pct / 100.0)
    link_out = np.zeros((H, H), np.int16)
    hl_out = np.zeros((H, H), np.int16)
    rank_out = np.zeros(H, np.int16)
    off = ~np.eye(H, dtype=bool)
    tested = off if sched is None else (sched & off)
    for k in range(S):
        v = T[k] if sched is None else np.where(tested, T[k], np.nan)
        med, mad = _robust(v[tested])
        d = v - med
        with np.errstate(invalid="ignore"):
            link_out += (d > lr) & (d / max(mad, floors[k], 1e-12) > z)
            hl_out += (d > lr) & (d / max(mad, floors[k], HOSTLINK_SE * mad, 1e-12) > z)
        for eff in (_row_medians(v, off, sched), _row_medians(v.T, off, sched)):
            m2, mad2 = _robust(eff[~np.isnan(eff)])
            e = eff - m2
            rank_out += (e > lr) & (e / max(mad2, floors[k], 1e-12) > z)
    kl, kr = min_outliers(S, p0, alpha), min_outliers(2 * S, p0, alpha)
    links = link_out >= kl
    hls = hl_out >= kl
    np.fill_diagonal(hls, False)
    named = set(np.flatnonzero(rank_out >= kr).tolist())
    if H >= 3:
        has = tested.any(axis=1)
        named |= set(np.flatnonzero((hls | ~tested).all(axis=1) & has).tolist())
        named |= set(np.flatnonzero((hls | ~tested).all(axis=0) & has).tolist())
    out = set(named)
    for s, d in zip(*np.nonzero(links | hls)):
        if s not in named and d not in named:
            out |= {int(s), int(d)}
    return out


def draw_plane(model, H, rng, mult=None):
    """[S, H, H] log link medians of one rail plane, healthy or times mult [H, H]."""
    S = len(model.bytes)
    T = np.empty((S, H, H), np.float64)
    r = model.draw_residuals(rng, H * H).reshape(H, H, S)
    for k in range(S):
        T[k] = np.log(model.base_s[k]) + r[:, :, k]
        if mult is not None:
            T[k] += np.log(mult)
        np.fill_diagonal(T[k], np.nan)
    return T


def fault_mult(cls, pct, H, rng):
    """The fault's [H, H] multiplier in its plane, and its target hosts."""
    m = np.ones((H, H))
    f = 1 + pct / 100
    if cls == "link":
        a, b = (int(x) for x in rng.choice(H, size=2, replace=False))
        m[a, b] = m[b, a] = f
        return m, {a, b}
    h = int(rng.integers(H))
    if cls in ("nic-egress", "nic-both", "rank"):
        m[h, :] *= f
    if cls in ("nic-ingress", "nic-both", "rank"):
        m[:, h] *= f
    return m, {h}


def fleet_trial(model, H, G, cls, pct, rng, floors, judge_args, bad=1, sched=None):
    """One simulated run: G planes, `bad` faults of the class in plane 0 (a plane is any rail),
    on distinct targets. Returns (found: every target named, wrong: healthy hosts named)."""
    named, target = set(), set()
    for g in range(G):
        mult = None
        if g == 0 and cls not in ("healthy", "down"):
            mult = np.ones((H, H))
            while len(target) < bad * (2 if cls == "link" else 1):
                m, t = fault_mult(cls, pct, H, rng)
                if not t & target:
                    mult, target = mult * m, target | t
        named |= judge_matrix(draw_plane(model, H, rng, mult), floors, sched=sched, **judge_args)
    if cls == "healthy":
        return None, len(named)
    return target <= named, len(named - target)


def check_small(model, H, trials, rng, judge_args):
    """(trials where judge_matrix and the unchanged file path name the same hosts, trials where
    the file path named any host), on the same draws."""
    import os
    import tempfile
    from .schema import load_run
    from .sim_files import Fault, write_run
    from .suspects import analyze
    from .validate_verdict import findings_of, host_verdicts
    same = named = 0
    hosts = [f"sim{i + 1}" for i in range(H)]
    with tempfile.TemporaryDirectory(prefix="gdr-simchk-") as wd:
        for t in range(trials):
            fault = Fault("healthy") if t % 2 == 0 else Fault("link", 10.0 + 5 * (t % 3), (hosts[1], hosts[2]))
            p = os.path.join(wd, "run.h5")
            truth = write_run(p, model, hosts, 1, fault, rng)
            run = load_run(p, summary=True)
            rep = analyze(run, **judge_args)
            st = host_verdicts(hosts, findings_of(rep, run), {}, {})
            by_file = {i for i, v in enumerate(st) if v.status != "healthy"}
            floors = [iteration_floor(model, rng, k) for k in range(len(model.bytes))]
            same += by_file == judge_matrix(truth, floors, **judge_args)
            named += bool(by_file)
    return same, named


def _bad_hosts_fit(bad, hosts, cells):
    """Each fault takes a host of its own (a link fault two): more than a fleet holds would never
    be placed, so it is refused before any work."""
    for cls, _ in cells:
        need = bad * (2 if cls == "link" else 1)
        if cls not in ("healthy", "down") and need > min(hosts):
            raise InputError(f"--bad-hosts {bad}: {cls} faults on distinct hosts need {need} hosts, and "
                             f"--hosts has {min(hosts)}: want at most {min(hosts) // (2 if cls == 'link' else 1)}")


def cmd_fleet(a):
    cells = parse_cells(a.cells)
    hosts = parse_hosts(a.hosts, name="simulate fleet --hosts")
    _bad_hosts_fit(a.bad_hosts, hosts, cells)
    model = load_model(a)
    rng = np.random.default_rng(a.seed)
    ja = {"z": a.z, "min_slowdown_pct": a.min_slowdown, "p0": a.p0, "alpha": a.alpha}
    floors = [iteration_floor(model, rng, k) for k in range(len(model.bytes))]
    rows = []
    if a.check:
        for H in (6, 12):
            same, named = check_small(model, H, a.check, rng, ja)
            rows.append({"check_hosts": H, "trials": a.check, "same_hosts_named": same, "file_named_any": named,
                         "ci": wilson(same, a.check)})
            print(f"# judge_matrix vs suspects+validate_verdict on the same {H}-host files: "
                  f"{same}/{a.check} name the same hosts ({named} of them name some host)")
    for H in hosts:
        sched = scheduled(H, a.max_rounds)
        for cls, pct in cells:
            t0 = time.monotonic()
            res = [fleet_trial(model, H, a.gpus, cls, pct, rng, floors, ja, a.bad_hosts, sched) for _ in range(a.trials)]
            found = [f for f, _ in res if f is not None]
            wrong = sum(w for _, w in res)
            tgt = 0 if cls == "healthy" else (2 if cls == "link" else 1) * a.bad_hosts
            per = a.trials * (H - tgt)
            row = {"hosts": H, "gpus": a.gpus, "class": cls, "severity": pct or None, "trials": a.trials,
                   "found": sum(found) if found else None,
                   "recall_ci": wilson(sum(found), len(found)) if found else None,
                   "wrong_hosts": wrong, "hosts_judged": per, "host_fp_ci": wilson(wrong, per),
                   "schedule_s_host_rounds": host_rounds_s(H, len(model.bytes), a.case_time, a.max_rounds),
                   "max_rounds": schedule.rounds_run(H, a.max_rounds), "bad": a.bad_hosts,
                   "schedule_s_rank_rounds": wall_time_s(H, a.gpus, len(model.bytes), a.case_time),
                   "case_time_s": a.case_time, "alpha": a.alpha, "min_slowdown": a.min_slowdown,
                   "sim_s": round(time.monotonic() - t0, 1),
                   "noise_files": len(model.sources), "seed": a.seed}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.out:
        from .outputs import open_append
        with open_append(a.out, "--out", [a.noise] + list(a.noise_from or [])) as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


def format_rows(rows):
    """The prediction table (markdown) of `simulate fleet --out` rows."""
    def ci(c, d=3):
        return f"[{c[0]:.{d}f}, {c[1]:.{d}f}]"
    out = ["| hosts x GPUs | rounds | alpha | fault | severity % | bad | trials | recall [95 % CI] | wrong hosts | "
           "host FP rate [95 % CI] | schedule, host rounds | schedule, rank rounds |", "| --- " * 12 + "|"]
    for r in rows:
        if "hosts" not in r:
            out.append(f"| check {r['check_hosts']} hosts | | | | {r['trials']} | same hosts named by both judges: "
                       f"{r['same_hosts_named']}/{r['trials']} {ci(r['ci'])} ({r.get('file_named_any', '?')} name some host) "
                       "| | | | | | |")
            continue
        rec = "-" if r["found"] is None else f"{r['found']}/{r['trials']} {ci(r['recall_ci'])}"
        rounds = r.get("max_rounds", schedule.rounds(r["hosts"]))
        out.append(f"| {r['hosts']} x {r['gpus']} | {rounds} | {r['alpha']:g} | {r['class']} | {r['severity'] or '-'} | "
                   f"{r.get('bad', 1)} | {r['trials']} | {rec} | {r['wrong_hosts']}/{r['hosts_judged']} | "
                   f"{r['wrong_hosts'] / r['hosts_judged']:.4f} {ci(r['host_fp_ci'], 4)} | "
                   f"{r['schedule_s_host_rounds'] / 60:.1f} min | {r['schedule_s_rank_rounds'] / 60:.1f} min |")
    return "\n".join(out)


ROW_COUNTS = ("hosts", "gpus", "trials", "wrong_hosts", "hosts_judged", "max_rounds", "bad")
CHECK_COUNTS = ("check_hosts", "trials", "same_hosts_named")


def _checked_row(r, where):
    """A row's numbers through numbers.check, as format_rows reads them."""
    if not isinstance(r, dict):
        raise InputError(f"{where}: want a JSON object")
    counts = CHECK_COUNTS if "hosts" not in r else ROW_COUNTS
    for k in counts:
        if k in r or k not in ("max_rounds", "bad"):
            numbers.field(r, k, "fleet-rows count", where)
    if "hosts" not in r:
        cis = ("ci",)
    else:
        for k in ("schedule_s_host_rounds", "schedule_s_rank_rounds"):
            numbers.field(r, k, "fleet-rows seconds", where)
        numbers.field(r, "alpha", "fleet-rows share", where)
        if not isinstance(r.get("class"), str):
            raise InputError(f"{where}: class: want a fault class name")
        if r.get("found") is not None:
            numbers.field(r, "found", "fleet-rows count", where)
        if r["hosts_judged"] < 1:
            raise InputError(f"{where}: hosts_judged 0: want a whole number from 1")
        cis = ("host_fp_ci",) + (("recall_ci",) if r.get("found") is not None else ())
    for k in cis:
        ci = r.get(k)
        if not isinstance(ci, list) or len(ci) != 2:
            raise InputError(f"{where}: {k}: want [low, high]")
        for i, x in enumerate(ci):
            numbers.check(x, "fleet-rows share", source=f"{where}: {k}[{i}]")
    return r


def cmd_table(a):
    try:
        text = inputs.read_text(a.rows, a.rows, TABLE_MAX_BYTES)
        lines = [x for x in text.splitlines() if x.strip()]
        numbers.check(len(lines), "fleet-rows lines", source=f"{a.rows}: rows")
        rows = [_checked_row(json.loads(x), f"{a.rows}:{i + 1}") for i, x in enumerate(lines)]
    except (OSError, ValueError) as e:
        raise InputError(f"{a.rows}: not simulate fleet rows ({str(e)[:200]})") from None
    print(format_rows(rows))
    return 0


def add_parser(ss, common):
    t = ss.add_parser("table", help="the markdown table of `simulate fleet --out` rows")
    t.add_argument("rows", type=file_name, help="the JSON lines simulate fleet --out wrote")
    t.set_defaults(func=cmd_table)
    f = ss.add_parser("fleet", help="predicted recall, host FP rate and schedule time at fleet scale")
    common(f)
    f.add_argument("--hosts", default="64,256,1024,4096", help="host counts (default 64,256,1024,4096)")
    f.add_argument("--gpus", type=numbers.arg("simulate fleet --gpus"), default=8, help="GPUs (rail planes) per host (default 8)")
    f.add_argument("--cells", default="healthy,link:10,nic-both:10", help="fault cells (simulate's doc)")
    f.add_argument("--trials", type=numbers.arg("simulate --trials"), default=10, help="per host count and cell (default 10)")
    f.add_argument("--case-time", type=numbers.arg("simulate fleet --case-time"), default=0.1,
                   help="seconds of timed iterations per case for the schedule time (default 0.1)")
    f.add_argument("--check", type=numbers.arg("simulate fleet --check"), default=0, metavar="N",
                   help="first compare judge_matrix with the file path on N files of 6 and of 12 hosts")
    f.add_argument("--max-rounds", type=numbers.arg("simulate fleet --max-rounds"), default=0, metavar="N",
                   help="host-rounds' first N rounds only (run --max-rounds): a sample; 0, the default: all")
    f.add_argument("--bad-hosts", type=numbers.arg("simulate fleet --bad-hosts"), default=1, metavar="N",
                   help="faults per trial, on distinct hosts (links: distinct host pairs); default 1")
    f.add_argument("--out", type=file_name, help="append the rows (JSON lines) here")
    f.set_defaults(func=cmd_fleet)
