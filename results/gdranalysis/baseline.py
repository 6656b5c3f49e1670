"""`gdrbench baseline RUN.h5...`: each link, GPU and host against its own past.

A link 4 % slower than it used to be trips no fleet-wide threshold (`suspects`
asks for 25 %, `validate` for 7 % against the other links of one run), but it
is the earliest sign of a failing cable or a PCIe link trained down. This
command keeps, for every item it can name across runs, a robust baseline of
its own past and runs Page's one-sided CUSUM on each new run against it.

What one run says about an item (the run's `/links`, or the matrix recomputed
from its `pair`/`rounds` cases, `links.py`), per test, transport, memory
kind, path and pattern:
- a link's value is its log median time less the median over the run's
  links of its class (both ends on one host, or not) at that size, averaged
  over sizes: what moves every link of a run (load on the machine, a
  fleet-wide change) is `compare`'s business, not a link's; taking it out
  halves the run-to-run spread on the emulated cluster (docs/fleet-scale.md);
- an endpoint's (`host/GPU`, the GPU's PCI bus id or, without one, `r` and
  the local rank) is the median of its links as a sender (`gpu-send`) and as
  a receiver (`gpu-recv`), given only where a host ran more than one rank;
- a host's (`host-send`, `host-recv`): the median of its links to and from
  other hosts.
Items are named by host and GPU, never by rank number, so runs with other
rank orders still line up.

The rule, per item, runs in time order (`history`'s order: `start_utc`):
its first --min-runs values are its past; then each run's
z = (value - median of past) / sd, sd the larger of the past's robust sd
(1.4826 MAD) and the median of that over all items of its kind and group
(few past runs give a poor MAD), z clipped at --clip (one run, however
slow, is never enough), S = max(0, S + z - k). S above h is a change,
starting at the run after S was last 0; the runs of a change never join the
past, the runs of an excursion that falls back to 0 do. After a change S is
held at h + 2, so that 2-4 runs back at the old level end it. An item is
reported when it is in a change at the last run and its change is at least
--min-drop percent of bandwidth below the past's median.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import os
import warnings

import numpy as np

from .history import _sort_key
from .links import LINK_PATTERNS, link_tables
from .schema import InputError
from .text import columns, fmt_num

MAD_SD = 1.4826
DEFAULT_MIN_RUNS = 5
DEFAULT_K = 0.5          # CUSUM allowance, in sd: tuned to a shift of 1 sd
DEFAULT_H = 5.0          # CUSUM decision interval, in sd
DEFAULT_CLIP = 4.0       # largest z one run may add: two runs needed for h 5
DEFAULT_MIN_DROP_PCT = 2.0
SD_FLOOR = 1e-3          # 0.1 %: below that a run's spread is the clock's
HOLD = 2.0               # S after a change: h + HOLD


@dataclasses.dataclass
class Params:
    min_runs: int = DEFAULT_MIN_RUNS
    k: float = DEFAULT_K
    h: float = DEFAULT_H
    clip: float = DEFAULT_CLIP
    min_drop_pct: float = DEFAULT_MIN_DROP_PCT


@dataclasses.dataclass
class Change:
    kind: str            # link, gpu-send, gpu-recv, host-send, host-recv
    what: str            # "gm2/r0>gm4/r0", "gm4"
    group: str           # "bw mpi host direct rounds"
    pct_below: float     # bandwidth below the past's median, percent
    since_file: str      # the first run of the change
    since_utc: str
    runs_changed: int    # runs in the change, the last included
    past_runs: int
    past_sd_pct: float   # the sd z was computed with, percent
    cusum: float
    z_recent: list       # the change's z per run (clipped as used), oldest first
    h: float = DEFAULT_H

    def evidence(self) -> str:
        zs = ", ".join(f"{z:.1f}" for z in self.z_recent[-4:])
        return (f"CUSUM {self.cusum:.1f} > {self.h:g}; z {zs} over {self.past_runs} past runs "
                f"(sd {self.past_sd_pct:.2f} %)")

    def as_dict(self):
        return dataclasses.asdict(self) | {"evidence": self.evidence()}


@dataclasses.dataclass
class Report:
    files: list           # (file, start_utc), oldest first
    params: Params
    judged: int           # items with more than min_runs runs
    too_short: int        # items seen in fewer runs
    changes: list

    def as_dict(self):
        return {"files": [{"file": f, "start_utc": s} for f, s in self.files],
                "params": dataclasses.asdict(self.params), "judged": self.judged,
                "too_short": self.too_short, "changes": [c.as_dict() for c in self.changes]}


# ---- what one run says -------------------------------------------------------

def endpoint(run, rank) -> str:
    """`host/0000:3b:00.0` (the GPU's bus id) or `host/r<local rank>`."""
    gpu = run.gpus[rank].split()[0] if rank < len(run.gpus) and run.gpus[rank] else ""
    local = run.local_ranks[rank] if rank < len(run.local_ranks) else rank
    return f"{run.host_of(rank)}/{gpu.lower() if gpu else f'r{local}'}"


def _residuals(t, hosts):
    """[n, n] mean over sizes of log(time) less the median of its class at that size."""
    lt = np.log(np.where(t > 0, t, np.nan))
    n = lt.shape[1]
    same = np.array([[hosts[i] == hosts[j] for j in range(n)] for i in range(n)])
    out = np.full(lt.shape, np.nan)
    for cls in (same, ~same):
        cls = cls & ~np.eye(n, dtype=bool)
        for s in range(lt.shape[0]):
            v = lt[s][cls]
            if np.isfinite(v).sum() >= 3:  # fewer: no run level to take out
                out[s][cls] = v - np.nanmedian(v)
    return np.nanmean(out, axis=0) if out.shape[0] else np.full((n, n), np.nan)


@contextlib.contextmanager
def _quiet():
    """All-NaN slices are expected here (links a run did not measure)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _median(vals):
    v = [x for x in vals if math.isfinite(x)]
    return float(np.median(v)) if v else math.nan


def run_values(run) -> dict:
    """{(group, kind, what): value (log units, + is slower)} of one run."""
    out = {}
    for tab in link_tables(run):
        if tab.pattern not in LINK_PATTERNS:
            continue
        group = f"{tab.test} {tab.transport} {tab.mem} {tab.path} {tab.pattern}"
        n = tab.ranks
        hosts = [run.host_of(r) for r in range(n)]
        eps = [endpoint(run, r) for r in range(n)]
        with _quiet():
            res = _residuals(np.asarray(tab.time_us, dtype=float), hosts)
        for i in range(n):
            for j in range(n):
                if i != j and math.isfinite(res[i, j]):
                    out[(group, "link", f"{eps[i]}>{eps[j]}")] = float(res[i, j])
        multi = len(set(hosts)) < n
        for r in range(n) if multi else ():
            out[(group, "gpu-send", eps[r])] = _median(res[r, :])
            out[(group, "gpu-recv", eps[r])] = _median(res[:, r])
        for h in sorted(set(hosts)):
            mine = [r for r in range(n) if hosts[r] == h]
            other = [r for r in range(n) if hosts[r] != h]
            out[(group, "host-send", h)] = _median(res[np.ix_(mine, other)].ravel())
            out[(group, "host-recv", h)] = _median(res[np.ix_(other, mine)].ravel())
    return {k: v for k, v in out.items() if math.isfinite(v)}


# ---- the rule ----------------------------------------------------------------

def robust_sd(v) -> float:
    v = np.asarray(v, dtype=float)
    return MAD_SD * float(np.median(np.abs(v - np.median(v)))) if v.size else math.nan


@dataclasses.dataclass
class Step:
    """An item's state after one run: in a change or not, and its numbers."""
    run: int            # index into the runs
    z: float            # clipped; nan while the past is still being filled
    cusum: float
    changed: bool
    start: int          # first run of the current excursion, -1 when S is 0
    pct_below: float    # of the excursion, against the past's median
    past_runs: int
    sd: float


def cusum(series, floor, p: Params) -> list:
    """Steps of one item's series [(run index, value)], oldest first."""
    past, pending, steps = [], [], []
    s, start, changed = 0.0, -1, False
    for ri, v in series:
        if len(past) < p.min_runs and not pending:
            past.append(v)
            steps.append(Step(ri, math.nan, 0.0, False, -1, math.nan, len(past), math.nan))
            continue
        mu = float(np.median(past))
        sd = max(robust_sd(past), floor, SD_FLOOR)
        z = min((v - mu) / sd, p.clip)
        s = max(0.0, s + z - p.k)
        pending.append(v)
        if s == 0.0:
            if not changed:
                past += pending   # a noise excursion: it was the item's normal state
            pending, start, changed = [], -1, False
        else:
            if start < 0:
                start = ri
            if s > p.h:
                changed = True
                s = min(s, p.h + HOLD)
        d = float(np.median(pending)) - mu if pending else 0.0
        steps.append(Step(ri, z, s, changed, start, 100.0 * (1.0 - math.exp(-d)), len(past), sd))
    return steps


def reported(step: Step, p: Params) -> bool:
    return step.changed and step.pct_below >= p.min_drop_pct


def build_series(runs) -> dict:
    """{item: [(run index, value)]} over runs already in time order."""
    series = collections.defaultdict(list)
    for i, run in enumerate(runs):
        for item, v in run_values(run).items():
            series[item].append((i, v))
    return series


def floors(series) -> dict:
    """{(group, kind): median over its items of their robust sd}: the least sd an item is judged with."""
    per = collections.defaultdict(list)
    for (group, kind, _), pts in series.items():
        if len(pts) >= 3:
            per[(group, kind)].append(robust_sd([v for _, v in pts]))
    return {k: float(np.median(v)) for k, v in per.items()}


def judge_series(series, p: Params):
    """(judged, too_short, {item: steps}) for every item."""
    fl = floors(series)
    steps, short = {}, 0
    for item, pts in series.items():
        if len(pts) <= p.min_runs:
            short += 1
            continue
        steps[item] = cusum(pts, fl.get(item[:2], 0.0), p)
    return len(steps), short, steps


def analyze(runs, p: Params) -> Report:
    runs = sorted(runs, key=_sort_key)
    series = build_series(runs)
    if not series:
        raise InputError("no link matrix in any file: baseline needs runs with --pattern rounds or --pairs")
    judged, short, steps = judge_series(series, p)
    if not judged:
        most = max(len(v) for v in series.values())
        raise InputError(f"no link, GPU or host is in more than --min-runs {p.min_runs} of the "
                         f"{len(runs)} runs (at most {most}): too little history to judge")
    names = [(os.path.basename(r.path), str(r.attrs.get("start_utc", ""))) for r in runs]
    changes = []
    for (group, kind, what), st in sorted(steps.items()):
        last = st[-1]
        if not reported(last, p):
            continue
        zs = [x.z for x in st if x.start == last.start and x.run >= last.start]
        changes.append(Change(kind, what, group, last.pct_below, names[last.start][0], names[last.start][1],
                              sum(1 for x in st if x.run >= last.start), last.past_runs,
                              100.0 * last.sd, last.cusum, zs, p.h))
    changes.sort(key=lambda c: (-c.pct_below, c.group, c.kind, c.what))
    return Report(names, p, judged, short, changes)


def format_table(rep: Report) -> str:
    p = rep.params
    out = [f"# {len(rep.files)} runs, {rep.files[0][1] or rep.files[0][0]} .. {rep.files[-1][1] or rep.files[-1][0]}; "
           f"{rep.judged} links, GPUs and hosts judged against their own past ({rep.too_short} in "
           f"{p.min_runs} runs or fewer: unknown); CUSUM k {p.k:g}, h {p.h:g}, z clipped at {p.clip:g}, "
           f"--min-drop {p.min_drop_pct:g} %"]
    if not rep.changes:
        out.append("# no change: every item judged is at its own past level")
        return "\n".join(out)
    out += columns(("kind", "what", "group", "below past", "since run", "runs", "evidence"),
                   [(c.kind, c.what, c.group, f"{fmt_num(c.pct_below, 1)} %",
                     f"{c.since_file} ({c.since_utc})", str(c.runs_changed), c.evidence())
                    for c in rep.changes], right={3, 5})
    return "\n".join(out)
