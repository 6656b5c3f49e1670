"""`gdrbench stragglers RUN.h5`: which ranks and hosts were slow, per case.

For every case, each rank's median time over its iterations is divided by
the median of those rank medians (the "median rank"). A rank whose ratio
exceeds 1 + threshold/100 is flagged. Ranks that sat a case out (NaN: the
ranks outside a point-to-point pair, the responder of a ping-pong) are left
out; a case with fewer than two ranks timed has nothing to compare and is
skipped. The summaries then say which ranks and hosts were flagged most.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .schema import InputError, Run, case_matches
from .text import columns, fmt_num, fmt_us

DEFAULT_THRESHOLD_PCT = 10.0


@dataclasses.dataclass
class CaseStragglers:
    case: str
    label: str
    key: dict
    rank_median_us: list        # per rank, None where the rank sat out
    median_rank_us: float
    ratio: list                 # per rank, None where the rank sat out
    slowest_rank: int
    slowest_host: str
    slowest_ratio: float
    flagged: list               # ranks above the threshold

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class StragglerReport:
    run: Run
    threshold_pct: float
    cases: list
    skipped: list               # labels of cases with < 2 ranks timed
    ranks: list                 # per-rank summary dicts
    hosts: list                 # per-host summary dicts

    @property
    def flagged_cases(self):
        return [c for c in self.cases if c.flagged]

    def as_dict(self):
        return {"file": self.run.path, "threshold_pct": self.threshold_pct,
                "cases": [c.as_dict() for c in self.cases],
                "skipped": self.skipped, "ranks": self.ranks, "hosts": self.hosts,
                "summary": {"cases": len(self.cases),
                            "cases_with_stragglers": len(self.flagged_cases),
                            "skipped": len(self.skipped)}}


def _none(x):
    return None if not np.isfinite(x) else float(x)


def analyze(run: Run, threshold_pct=DEFAULT_THRESHOLD_PCT, spec=None) -> StragglerReport:
    if threshold_pct < 0:
        raise InputError(f"--threshold {threshold_pct}: must be >= 0")
    limit = 1.0 + threshold_pct / 100.0
    cases, skipped = [], []
    nr = max([run.nranks] + [c.times.shape[0] for c in run.cases])
    per_rank = [[] for _ in range(nr)]
    flagged_count = [0] * nr
    selected = [c for c in run.cases if not spec or case_matches(c, spec)]
    if spec and not selected:
        raise InputError(f"{run.path}: no case matches --case")
    for c in selected:
        med = c.rank_medians()
        ok = np.isfinite(med) & (med > 0)
        if ok.sum() < 2:
            skipped.append(c.label())
            continue
        mm = float(np.median(med[ok]))
        ratio = np.where(ok, med / mm, np.nan)
        slow = int(np.nanargmax(ratio))
        flagged = [int(r) for r in np.flatnonzero(ok & (ratio > limit))]
        for r in np.flatnonzero(ok):
            per_rank[r].append((float(ratio[r]), c.label()))
        for r in flagged:
            flagged_count[r] += 1
        cases.append(CaseStragglers(
            case=c.name, label=c.label(), key=c.key_dict(),
            rank_median_us=[_none(x * 1e6) for x in med], median_rank_us=mm * 1e6,
            ratio=[_none(x) for x in ratio], slowest_rank=slow, slowest_host=run.host_of(slow),
            slowest_ratio=float(ratio[slow]), flagged=flagged))
    ranks = []
    for r in range(nr):
        if not per_rank[r]:
            continue
        rs = np.array([x for x, _ in per_rank[r]])
        worst = max(per_rank[r])
        ranks.append({"rank": r, "host": run.host_of(r),
                      "local_rank": run.local_ranks[r] if r < len(run.local_ranks) else None,
                      "cases": len(rs), "flagged": flagged_count[r],
                      "median_ratio": float(np.median(rs)), "max_ratio": worst[0],
                      "max_case": worst[1]})
    hosts = []
    for h in sorted({x["host"] for x in ranks}):
        mine = [x for x in ranks if x["host"] == h]
        hr = set(x["rank"] for x in mine)
        hosts.append({"host": h, "ranks": sorted(hr),
                      "cases_flagged": sum(1 for c in cases if hr & set(c.flagged)),
                      "median_ratio": float(np.median([x["median_ratio"] for x in mine])),
                      "max_ratio": max(x["max_ratio"] for x in mine)})
    return StragglerReport(run=run, threshold_pct=threshold_pct, cases=cases, skipped=skipped,
                           ranks=ranks, hosts=hosts)


def format_table(rep: StragglerReport, show_all=False) -> str:
    out = [f"# {rep.run.describe()}"]
    out += [f"# note: {w}" for w in rep.run.warnings]
    out.append(f"# per case: each rank's median time / the median of rank medians; "
               f"flagged above {1 + rep.threshold_pct / 100:.2f} (threshold {rep.threshold_pct:g}%)")
    rows = []
    for c in rep.cases:
        if not show_all and not c.flagged:
            continue
        flagged = ",".join(f"{r}({rep.run.host_of(r)}):{c.ratio[r]:.2f}" for r in c.flagged) or "-"
        rows.append((c.label, fmt_us(c.median_rank_us), str(c.slowest_rank), c.slowest_host,
                     fmt_num(c.slowest_ratio, 2), flagged))
    if rows:
        out += columns(("case", "median rank(us)", "slowest", "host", "ratio", "flagged rank(host):ratio"),
                       rows, right={1, 2, 4})
    else:
        out.append(f"# no rank above the threshold in any of {len(rep.cases)} cases")
    if rep.ranks:
        out.append("")
        out.append("# per rank, over the cases it was timed in")
        out += columns(("rank", "host", "local", "cases", "flagged", "median ratio", "max ratio", "worst case"),
                       [(str(x["rank"]), x["host"], "-" if x["local_rank"] is None else str(x["local_rank"]),
                         str(x["cases"]), str(x["flagged"]), fmt_num(x["median_ratio"], 3),
                         fmt_num(x["max_ratio"], 2), x["max_case"]) for x in rep.ranks],
                       right={0, 2, 3, 4, 5, 6})
    if len(rep.hosts) > 1:
        out.append("")
        out.append("# per host")
        out += columns(("host", "ranks", "cases flagged", "median ratio", "max ratio"),
                       [(h["host"], ",".join(map(str, h["ranks"])), str(h["cases_flagged"]),
                         fmt_num(h["median_ratio"], 3), fmt_num(h["max_ratio"], 2)) for h in rep.hosts],
                       right={2, 3, 4})
    out.append(f"# {len(rep.cases)} cases analysed, {len(rep.flagged_cases)} with a straggler"
               + (f"; {len(rep.skipped)} skipped (fewer than 2 ranks timed, e.g. {rep.skipped[0]})"
                  if rep.skipped else ""))
    return "\n".join(out)
