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
import warnings

import numpy as np

from .schema import InputError, Run, case_matches
from .text import columns, fmt_num, fmt_us

DEFAULT_THRESHOLD_PCT = 10.0


@dataclasses.dataclass
class CaseStragglers:
    case: str
    label: str
    key: dict
    rank_median_us: np.ndarray  # per rank, NaN where the rank sat out (None in as_dict)
    median_rank_us: float
    ratio: np.ndarray           # per rank, NaN where the rank sat out (None in as_dict)
    slowest_rank: int
    slowest_host: str
    slowest_ratio: float
    flagged: list               # ranks above the threshold

    def as_dict(self):
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["rank_median_us"] = [_none(x) for x in self.rank_median_us]
        d["ratio"] = [_none(x) for x in self.ratio]
        return d


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
    flagged_count = np.zeros(nr, dtype=np.int64)
    selected = [c for c in run.cases if not spec or case_matches(c, spec)]
    if spec and not selected:
        raise InputError(f"{run.path}: no case matches --case")
    # Every judged case's ratios as one [cases, ranks] array (NaN: sat out), not a Python
    # object per rank and case: a 1,024 x 8 file of every host pair has 50 million.
    rows = np.full((len(selected), nr), np.nan)
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
        rows[len(cases), :ratio.size] = ratio
        flagged_count[flagged] += 1
        cases.append(CaseStragglers(
            case=c.name, label=c.label(), key=c.key_dict(), rank_median_us=med * 1e6, median_rank_us=mm * 1e6,
            ratio=ratio, slowest_rank=slow, slowest_host=run.host_of(slow),
            slowest_ratio=float(ratio[slow]), flagged=flagged))
    rows = rows[:len(cases)]
    seen = np.isfinite(rows)
    counts = seen.sum(axis=0)
    ranks = []
    if cases:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # ranks that sat out every case: skipped below
            medians, worst = np.nanmedian(rows, axis=0), np.nanmax(rows, axis=0)
    for r in np.flatnonzero(counts):
        at = np.flatnonzero(rows[:, r] == worst[r])  # ties: the largest label, as max() over (ratio, label)
        ranks.append({"rank": int(r), "host": run.host_of(int(r)),
                      "local_rank": run.local_ranks[r] if r < len(run.local_ranks) else None,
                      "cases": int(counts[r]), "flagged": int(flagged_count[r]),
                      "median_ratio": float(medians[r]), "max_ratio": float(worst[r]),
                      "max_case": max(cases[i].label for i in at)})
    by_host, flagged_in = {}, {}
    for x in ranks:
        by_host.setdefault(x["host"], []).append(x)
    for c in cases:  # each case counts once for every host it flagged a rank of
        for h in {run.host_of(r) for r in c.flagged}:
            flagged_in[h] = flagged_in.get(h, 0) + 1
    hosts = [{"host": h, "ranks": sorted(x["rank"] for x in mine), "cases_flagged": flagged_in.get(h, 0),
              "median_ratio": float(np.median([x["median_ratio"] for x in mine])),
              "max_ratio": max(x["max_ratio"] for x in mine)} for h, mine in sorted(by_host.items())]
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
