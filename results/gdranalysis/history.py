"""`gdrbench history results/archive/*.h5 --case "test=allreduce,..."`:
the trend of one case across archived runs, oldest first.

Runs are ordered by their `start_utc` attribute (falling back on the
`<yyyymmddTHHMMSS>` prefix of the file name). Files that cannot be read are
reported on stderr and left out. When the `--case` selection matches
several distinct cases (e.g. no `bytes=` given), each gets its own trend.
"""

from __future__ import annotations

import dataclasses
import os
import re
from datetime import datetime, timezone

import numpy as np

from .schema import InputError, KEY_FIELDS, Run, case_matches
from .text import columns, fmt_num, fmt_us

_NAME_TIME = re.compile(r"(\d{8}T\d{6})")


def run_time(run: Run):
    t = run.start
    if t is None:
        m = _NAME_TIME.search(os.path.basename(run.path))
        if m:
            t = datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
    return t


def _sort_key(run: Run):
    t = run_time(run)
    return (t is None, t or datetime.min.replace(tzinfo=timezone.utc), os.path.basename(run.path))


@dataclasses.dataclass
class Point:
    file: str
    start_utc: str
    git_commit: str
    gdrbench_version: str
    hosts: str
    case: str
    iters: int
    median_us: float
    p10_us: float
    p90_us: float
    busbw_gbps: float
    vs_first: float
    vs_previous: float


@dataclasses.dataclass
class Trend:
    key: dict
    label: str
    points: list

    def as_dict(self):
        return {"key": self.key, "label": self.label, "points": [dataclasses.asdict(p) for p in self.points]}


def trends(runs, spec: dict) -> list:
    """One Trend per distinct case key matching `spec`, runs oldest first."""
    if not spec:
        raise InputError("--case is required, e.g. --case test=allreduce,transport=mpi,bytes=1M")
    groups = {}
    for run in sorted(runs, key=_sort_key):
        for c in run.cases:
            if not case_matches(c, spec):
                continue
            groups.setdefault(c.key, (c, []))[1].append((run, c))
    out = []
    for key, (first_case, items) in groups.items():
        pts, first, prev = [], None, None
        for run, c in items:
            s = c.slowest()
            s = s[np.isfinite(s)] * 1e6
            med = float(np.median(s)) if s.size else float("nan")
            if first is None:
                first = med
            pts.append(Point(
                file=os.path.basename(run.path), start_utc=str(run.attrs.get("start_utc", "")),
                git_commit=str(run.attrs.get("git_commit", "")),
                gdrbench_version=str(run.attrs.get("gdrbench_version", "")),
                hosts=",".join(sorted(set(run.hosts))), case=c.name, iters=int(s.size),
                median_us=med,
                p10_us=float(np.percentile(s, 10)) if s.size else float("nan"),
                p90_us=float(np.percentile(s, 90)) if s.size else float("nan"),
                busbw_gbps=c.busbw_median(),
                vs_first=med / first if first else float("nan"),
                vs_previous=med / prev if prev else float("nan")))
            prev = med
        out.append(Trend(key=first_case.key_dict(), label=first_case.label(with_ranks=True), points=pts))
    out.sort(key=lambda t: tuple(str(t.key.get(k)) if k not in ("bytes", "ranks", "src", "dst") else
                                 f"{t.key.get(k):020d}" for k in KEY_FIELDS))
    return out


def format_table(tr: list, nfiles: int) -> str:
    out = []
    if len(tr) > 1:
        out.append(f"# the selection matches {len(tr)} distinct cases; add keys to --case to narrow it")
    for t in tr:
        out.append(f"# {t.label}: {len(t.points)} of {nfiles} runs; time = median over iterations "
                   "of the slowest rank, us (p10..p90 of iterations)")
        out += columns(("start (UTC)", "file", "commit", "hosts", "iters", "median(us)", "p10", "p90",
                        "busbw(GB/s)", "vs first", "vs prev"),
                       [(p.start_utc, p.file, p.git_commit, p.hosts, str(p.iters), fmt_us(p.median_us),
                         fmt_us(p.p10_us), fmt_us(p.p90_us), fmt_num(p.busbw_gbps, 2),
                         fmt_num(p.vs_first, 3), fmt_num(p.vs_previous, 3)) for p in t.points],
                       right={4, 5, 6, 7, 8, 9, 10})
        out.append("")
    return "\n".join(out).rstrip()


def plot(tr: list, path: str):
    from . import plots
    plots.history_png(tr, path)
