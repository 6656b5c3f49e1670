"""`gdrbench suspects RUN.h5`: the links, ranks and hosts that are outliers.

Evidence comes in groups of comparable measurements, one per (test,
transport, memory, path, pattern, size):

- link patterns (`pair`, `rounds`): the ranks x ranks matrix of median link
  times, in log space. First per host link (the block of host A's ranks
  sending to host B's): its median against the other host links of its
  class (within one host, or between two), leave-out; then each block's
  median is taken out of its links, and the rest is judged per link and per
  rank as follows. Each link is compared with the other links of its
  class (both ends on one host, or not): its distance from their median in
  units of the median absolute deviation (x 1.4826, a standard deviation
  for normal data). Each rank as a sender (the median of its row: one slow
  partner does not move it) and as a receiver (of its column) is compared
  with the other ranks' the same way.
- rank patterns (`incast`, `fanout`, `neighbor`): per case, each rank's
  median time against the ranks in the same role (the root apart).

The scale of every comparison is never below the run's own iteration noise:
the standard error of a median over the iterations (1.2533 x the robust sd
of one link's iterations / sqrt(iterations), the median over links). An
outlier must be more than --z scales above the median AND more than
--min-slowdown percent slower. A rank (its comparisons as a sender, a
receiver and in rank patterns pooled) or a link is a suspect when it was an
outlier in more comparisons than chance allows: P(X >= k) < --alpha (1e-3)
for X binomial over its m comparisons with the outlier rate of healthy runs,
--p0 (2%: tests/analysis/measure_suspects_fp.py measures it). One outlier
is never enough. A host is a suspect when all its ranks are, or when its
host links to (or from) every other host are and there are two or more
others: between two hosts, A>B slow is A sending or B receiving, the same
in every link time. Exit 1 if any.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from . import schedule
from .links import LINK_PATTERNS
from .schema import InputError, Run, case_matches, format_bytes
from .text import columns, fmt_num

DEFAULT_Z = 5.0
DEFAULT_MIN_SLOWDOWN_PCT = 25.0
DEFAULT_P0 = 0.02     # outliers per comparison in healthy runs (measured, see the module doc)
DEFAULT_ALPHA = 1e-3
MAD_SD = 1.4826


@dataclasses.dataclass
class Finding:
    kind: str        # "link", "sender", "receiver", "rank", "hostlink"
    what: str        # "2>3", "rank 2"
    ranks: tuple
    group: str       # "latency mpi host direct rounds 64K"
    pattern: str
    ratio: float     # how many times slower than the median of its peers
    z: float
    outlier: bool


def _robust(v):
    v = v[np.isfinite(v)]
    if v.size == 0:
        return np.nan, np.nan
    m = float(np.median(v))
    return m, MAD_SD * float(np.median(np.abs(v - m)))


def _loo_median(f, p):
    """The median of sorted `f` with the elements at sorted positions `p` (an array) left out, each
    on its own: the sorted remainder's j-th value is f[j] below p and f[j + 1] from p on."""
    m = f.size - 1
    if m <= 0:
        return np.full(p.shape, np.nan)
    at = lambda j: np.where(j < p, f[np.minimum(j, f.size - 1)], f[np.minimum(j + 1, f.size - 1)])  # noqa: E731
    if m % 2:
        return at((m - 1) // 2)
    return (at(m // 2 - 1) + at(m // 2)) / 2


def _loo_robust(values):
    """(medians, sds): for every i, exactly `_robust(np.delete(values, i))`, in O(n log n)
    rather than O(n^2): judging each of a fleet's thousands of links or hosts against the
    others. The median of all but one sorted value is one of at most three; for each, the
    deviations are sorted once and the one left out is found by its position."""
    v = np.asarray(values, dtype=float)
    n = v.size
    med, sd = np.full(n, np.nan), np.full(n, np.nan)
    fin = np.flatnonzero(np.isfinite(v))
    m_all, sd_all = _robust(v)
    med[~np.isfinite(v)], sd[~np.isfinite(v)] = m_all, sd_all  # leaving out a NaN changes nothing
    if fin.size == 0:
        return med, sd
    order = fin[np.argsort(v[fin], kind="stable")]
    f = v[order]
    rank_of = np.empty(v.size, dtype=int)
    rank_of[order] = np.arange(fin.size)
    p = rank_of[fin]                                   # each finite value's sorted position
    mloo = _loo_median(f, p)
    med[fin] = mloo
    for c in np.unique(mloo[np.isfinite(mloo)]):
        sel = mloo == c
        dev = np.abs(f - c)
        dorder = np.argsort(dev, kind="stable")
        drank = np.empty(f.size, dtype=int)
        drank[dorder] = np.arange(f.size)
        sd[fin[sel]] = MAD_SD * _loo_median(dev[dorder], drank[p[sel]])
    return med, sd


def _median_se(times):
    """Standard error (log units) of the median of one rank's iterations."""
    t = times[np.isfinite(times) & (times > 0)]
    if t.size < 3:
        return np.nan
    _, sd = _robust(np.log(t))
    return 1.2533 * sd / np.sqrt(t.size)


class _Collector:
    def __init__(self, z, min_ratio):
        self.z, self.min_ratio = z, min_ratio
        self.findings = []

    def judge_all(self, kind, whats, ranks, group, pattern, values, floor, leave_out=False):
        """Judges each of `values` (log times of comparable things) against all of them, or
        (leave_out) against the others only: its ratio to their median and z over their robust
        sd (at least `floor`: one value or one per item). O(n log n) a group, so a fleet's
        thousands of links or hosts are judged in seconds."""
        values = np.asarray(values, dtype=float)
        if leave_out:
            med, mad = _loo_robust(values)
        else:
            m, d = _robust(values)
            med, mad = np.full(values.size, m), np.full(values.size, d)
        fl = np.broadcast_to(np.asarray(floor, dtype=float), values.shape)
        scale = np.maximum(np.maximum(mad, np.where(np.isfinite(fl), fl, 0.0)), 1e-12)
        d = values - med
        ratio, z = np.exp(d), d / scale
        for i, what in enumerate(whats):
            self.findings.append(Finding(kind, what, tuple(ranks[i]), group, pattern, float(ratio[i]),
                                         float(z[i]), bool(z[i] > self.z and ratio[i] > self.min_ratio)))


def _group_label(a, pattern):
    return f"{a['test']} {a['transport']} {a['mem']} {a['path']} {pattern} {format_bytes(a['bytes'])}"


def _link_groups(cases):
    """{(test, transport, mem, path, pattern, bytes): [cases]} of the link patterns."""
    g = collections.defaultdict(list)
    for c in cases:
        a = c.attrs
        if a["dtype"] == "byte" and not a["reference"] and c.pattern != "retest":  # retests: retest.py
            g[(a["test"], a["transport"], a["mem"], a["path"], c.pattern, a["bytes"])].append(c)
    return g


def _host_blocks(col, run, T, links, label, pattern, floor):
    """Median link time per ordered host pair (a block: host A's ranks sending to host B's),
    each block judged against the other blocks of its class (intra-host or not, leave-out).
    Returns T less each link's block median: what is left for the ranks and links to explain.
    A slow direction between hosts (node2 -> node1) moves a whole block; left in, it would make
    the receivers on node1 look slow (most of their senders are on node2) and, with half of the
    cross-host links slow, inflate the spread that those links are judged by."""
    blocks = collections.defaultdict(list)
    for s, d in links:
        blocks[(run.host_of(s), run.host_of(d))].append((s, d))
    med = {b: float(np.median([T[l] for l in ls])) for b, ls in blocks.items()}
    R = T.copy()
    # One rank per host: a block is one link, taking it out would leave nothing for the links,
    # senders and receivers (a host sending 25% slower to all was then never named).
    single = all(len(ls) == 1 for ls in blocks.values())
    for b, ls in blocks.items():
        for l in ls:
            R[l] -= 0.0 if single else med[b]
    _, sd = _robust(np.array([R[l] for l in links]))
    for cls in (True, False):
        bs = sorted(b for b in blocks if (b[0] == b[1]) == cls)
        if len(bs) < 2:
            continue
        vals = np.array([med[b] for b in bs])
        fls = []
        for b in bs:
            # the difference of two block medians: sqrt(2) x 1.2533 sd / sqrt(links)
            se = 1.7725 * sd / np.sqrt(len(blocks[b])) if np.isfinite(sd) else np.nan
            fls.append(np.nanmax([floor, se]) if np.isfinite([floor, se]).any() else np.nan)
        col.judge_all("hostlink", [f"{b[0]}>{b[1]}" for b in bs],
                      [tuple(sorted({r for l in blocks[b] for r in l})) for b in bs], label, pattern, vals, fls,
                      leave_out=True)
    return R


def _judge_links(col, run, key, cases, n):
    T = np.full((n, n), np.nan)
    se = []
    for c in cases:
        med = c.rank_medians()
        for s, d in c.links():
            if 0 <= s < n and 0 <= d < n and med[s] > 0:
                T[s, d] = np.log(med[s])
                se.append(_median_se(c.times[s]))
    floor = float(np.nanmedian(se)) if se and np.isfinite(se).any() else np.nan
    label = _group_label(cases[0].attrs, key[4])
    T = _host_blocks(col, run, T, [(int(s), int(d)) for s, d in zip(*np.nonzero(np.isfinite(T)))],
                     label, key[4], floor)
    host = np.array([run.host_of(r) for r in range(n)], dtype=object)
    same = host[:, None] == host[None, :]
    finite = np.isfinite(T)
    if finite.sum() < 3:
        return
    for cls in (True, False):
        ss, ds = np.nonzero(finite & (same == cls))
        if ss.size >= 3:
            col.judge_all("link", [f"{s}>{d}" for s, d in zip(ss, ds)], [(int(s), int(d)) for s, d in zip(ss, ds)],
                          label, key[4], T[ss, ds], floor)
    with np.errstate(all="ignore"):
        rows, cols = np.nanmedian(T, axis=1), np.nanmedian(T, axis=0)
    for kind, eff in (("sender", rows), ("receiver", cols)):
        active = [r for r in range(n) if np.isfinite(eff[r])]
        if len(active) >= 4:  # the judged rank against at least 3 others
            col.judge_all(kind, [f"rank {r}" for r in active], [(r,) for r in active], label, key[4], eff[active],
                          floor, leave_out=True)


def _judge_rank_rows(col, c):
    """incast, fanout, neighbor: each rank against the ranks in its role."""
    n = c.times.shape[0]
    med = c.rank_medians()
    role = collections.Counter()
    for s, d in c.links():
        role[s] += 1
        role[d] += 1000  # in-degree and out-degree apart
    by_role = collections.defaultdict(list)
    for r in range(n):
        if np.isfinite(med[r]) and med[r] > 0:
            by_role[role[r]].append(r)
    floor = np.nanmedian([_median_se(c.times[r]) for r in range(n)]) if n else np.nan
    label = _group_label(c.attrs, f"{c.pattern}{c.attrs.get('step', '')}")
    for ranks in by_role.values():
        if len(ranks) < 3:
            continue
        col.judge_all("rank", [f"rank {r}" for r in ranks], [(r,) for r in ranks], label, c.pattern,
                      np.log(med[ranks]), floor)


@dataclasses.dataclass
class Suspect:
    kind: str             # "rank", "link" or "hostlink" (host A's ranks sending to host B's: "node2>node1")
    what: str
    host: str
    outlier_in: int
    measured_in: int
    median_ratio: float   # over the comparisons where it was an outlier
    max_z: float
    patterns: list
    worst: str            # the group where it was slowest
    p_value: float        # P(X >= outlier_in) by chance
    as_: list             # sender, receiver, rank (rank patterns), link, hostlink
    links: list = dataclasses.field(default_factory=list)  # hostlink: its rank links, "2>0"
    rail: int | None = None  # link under host-rounds: the rail both its ranks are on


@dataclasses.dataclass
class SuspectReport:
    run: Run
    z: float
    min_slowdown_pct: float
    p0: float
    alpha: float
    groups: int
    judged: int                  # comparisons made
    outliers: int                # of which outliers
    suspects: list
    hosts: list                  # suspect hosts
    schedule: str = ""           # what the file says was scheduled and why (schedule.recorded)
    schedule_problems: list = dataclasses.field(default_factory=list)  # where the cases disagree with it
    retest: object = None        # the second phase recomputed from the file (retest.Report), or None

    def as_dict(self):
        return {"file": self.run.path, "z": self.z, "min_slowdown_pct": self.min_slowdown_pct,
                "p0": self.p0, "alpha": self.alpha,
                "groups": self.groups, "judged": self.judged, "outliers": self.outliers,
                "suspects": [dataclasses.asdict(s) for s in self.suspects], "hosts": self.hosts,
                "schedule": self.schedule, "schedule_problems": self.schedule_problems,
                "retest": self.retest.as_dict() if self.retest else None}


def _retest():
    """retest.py (imported here: it imports this module's rule)."""
    from . import retest
    return retest


def analyze(run: Run, z=DEFAULT_Z, min_slowdown_pct=DEFAULT_MIN_SLOWDOWN_PCT, spec=None,
            p0=DEFAULT_P0, alpha=DEFAULT_ALPHA) -> SuspectReport:
    from scipy.stats import binom
    if not z > 0:
        raise InputError(f"--z {z}: must be > 0")
    if not (0 < p0 < 1 and 0 < alpha < 1):
        raise InputError(f"--p0 {p0}, --alpha {alpha}: each must be between 0 and 1")
    col = _Collector(z, 1.0 + min_slowdown_pct / 100.0)
    cases = [c for c in run.cases if not spec or case_matches(c, spec)]
    if spec and not cases:
        raise InputError(f"{run.path}: no case matches --case")
    groups = 0
    for key, cs in sorted(_link_groups(cases).items(), key=lambda kv: str(kv[0])):
        n = max(c.times.shape[0] for c in cs)
        if key[4] in LINK_PATTERNS:
            _judge_links(col, run, key, cs, n)
        else:
            for c in cs:
                _judge_rank_rows(col, c)
        groups += 1
    if not groups:
        raise InputError(f"{run.path}: no point-to-point case to judge (run latency, bw or bibw with "
                         "--pattern rounds or --pairs all)")
    by = collections.defaultdict(list)
    for f in col.findings:
        by[(f.kind if f.kind in ("link", "hostlink") else "rank", f.what)].append(f)
    suspects = []
    for (kind, what), fs in by.items():
        out = [f for f in fs if f.outlier]
        p = float(binom.sf(len(out) - 1, len(fs), p0)) if out else 1.0
        if len(out) < 2 or p >= alpha:
            continue
        worst = max(out, key=lambda f: f.ratio)
        hosts = what if kind == "hostlink" else ">".join(sorted({run.host_of(r) for r in fs[0].ranks}))
        members = []
        if kind == "hostlink":
            a, b = what.split(">")
            members = [f"{s}>{d}" for s in range(run.nranks) for d in range(run.nranks)
                       if s != d and run.host_of(s) == a and run.host_of(d) == b]
        suspects.append(Suspect(kind, what, hosts, len(out), len(fs),
                                float(np.median([f.ratio for f in out])), max(f.z for f in out),
                                sorted({f.pattern for f in out}), worst.group, p, sorted({f.kind for f in out}),
                                members))
    rec = schedule.recorded(run)
    if rec and rec.rank_rail:  # host-rounds: each link is one rail between two hosts
        for sus in suspects:
            if sus.kind == "link":
                sus.rail = rec.rank_rail[int(sus.what.split(">")[0])]
    suspects.sort(key=lambda s: (-s.median_ratio, s.kind, s.what))
    bad_ranks = {int(s.what.split()[1]) for s in suspects if s.what.startswith("rank ")}
    all_hosts = sorted(set(run.hosts[:run.nranks]))
    slow_dirs = {tuple(s.what.split(">")) for s in suspects if s.kind == "hostlink"}
    hosts = []
    for h in all_hosts:
        mine = [r for r in range(run.nranks) if run.host_of(r) == h]
        if mine and all(r in bad_ranks for r in mine) and len(all_hosts) > 1:
            hosts.append(h)
        # Every other host slow from it (or to it), where the others are two or more: one host
        # explains it. Between two hosts, A>B slow is A's sending or B's receiving: no host named.
        others = [o for o in all_hosts if o != h]
        if h not in hosts and len(others) >= 2 and (all((h, o) in slow_dirs for o in others)
                                                    or all((o, h) in slow_dirs for o in others)):
            hosts.append(h)
    return SuspectReport(run=run, z=z, min_slowdown_pct=min_slowdown_pct, p0=p0, alpha=alpha, groups=groups,
                         judged=len(col.findings), outliers=sum(f.outlier for f in col.findings),
                         suspects=suspects, hosts=hosts, schedule=rec.describe() if rec else "",
                         schedule_problems=schedule.host_rounds_problems(run, rec) if rec and rec.hosts else [],
                         retest=_retest().analyze(run) if not spec else None)


def format_table(rep: SuspectReport) -> str:
    out = [f"# {rep.run.describe()}"]
    out += [f"# note: {w}" for w in rep.run.warnings]
    if rep.schedule:
        out.append(f"# {rep.schedule}")
    out += [f"# WARNING: schedule: {p}" for p in rep.schedule_problems]
    out.append(f"# outlier: more than {rep.z:g} robust sd (MAD x 1.4826, never below the iteration noise's "
               f"standard error) above the median of its peers and more than {rep.min_slowdown_pct:g}% "
               f"slower; suspect: more outliers than chance allows (P < {rep.alpha:g} at a healthy rate of "
               f"{100 * rep.p0:g}% per comparison)")
    if rep.suspects:
        out += columns(("suspect", "as", "host", "outlier in", "chance", "slower x", "max z", "pattern",
                        "worst group"),
                       [(s.what + (f" rail {s.rail}" if s.rail is not None else ""), ",".join(s.as_), s.host, f"{s.outlier_in}/{s.measured_in}", f"{s.p_value:.1e}",
                         fmt_num(s.median_ratio, 2), fmt_num(s.max_z, 1), ",".join(s.patterns), s.worst)
                        for s in rep.suspects],
                       right={3, 4, 5, 6})
    else:
        out.append("# no suspect")
    if rep.hosts:
        out.append(f"# suspect host(s), every rank of which is a suspect, or every link of which to (or from) "
                   f"the other hosts: {', '.join(rep.hosts)}")
    for s in rep.suspects:
        if s.kind == "hostlink" and s.what.count(">") == 1:
            a, b = s.what.split(">")
            if a != b and not {a, b} & set(rep.hosts):
                out.append(f"# suspect host link {s.what}: {a}'s sending side or {b}'s receiving side "
                           f"(only a third host's links could tell which)")
    out += _retest().format_lines(rep.retest)
    out.append(f"# {rep.groups} groups, {rep.judged} comparisons, {rep.outliers} outliers, "
               f"{len(rep.suspects)} suspects")
    return "\n".join(out)
