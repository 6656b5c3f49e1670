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
--p0 (2%: tests/analysis/measure_false_positives.py suspects measures it). One outlier
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
from .robust import group_medians, loo_robust, robust
from .schema import InputError, Run, case_matches, format_bytes
from .text import columns, fmt_num

DEFAULT_Z = 5.0
DEFAULT_MIN_SLOWDOWN_PCT = 25.0
DEFAULT_P0 = 0.02     # outliers per comparison in healthy runs (measured, see the module doc)
DEFAULT_ALPHA = 1e-3
LINK, HOSTLINK, RANK = "link", "hostlink", "rank"   # what a comparison judges (sender, receiver: a rank)


@dataclasses.dataclass
class _Batch:
    """One group's comparisons of one kind, as arrays: a fleet's file makes millions, and a
    Python object each was the wall (46 GB at 1,024 x 8). item: ids within `of` (link: s x
    2^32 + d, host link: host indices the same way, rank: the rank); what(id): its name."""
    kind: str            # link, hostlink, sender, receiver, rank
    of: str              # LINK, HOSTLINK or RANK: the thing judged
    ids: np.ndarray
    what: object
    group: str
    pattern: str
    ratio: np.ndarray
    z: np.ndarray
    outlier: np.ndarray


class _Collector:
    def __init__(self, z, min_ratio):
        self.z, self.min_ratio = z, min_ratio
        self.batches = []

    def judge_all(self, kind, of, ids, what, group, pattern, values, floor, leave_out=False):
        """Judges each of `values` (log times of comparable things) against all of them, or
        (leave_out) against the others only: its ratio to their median and z over their robust
        sd (at least `floor`: one value or one per item). O(n log n) a group."""
        values = np.asarray(values, dtype=float)
        if leave_out:
            med, mad = loo_robust(values)
        else:
            m, d = robust(values)
            med, mad = np.full(values.size, m), np.full(values.size, d)
        fl = np.broadcast_to(np.asarray(floor, dtype=float), values.shape)
        scale = np.maximum(np.maximum(mad, np.where(np.isfinite(fl), fl, 0.0)), 1e-12)
        d = values - med
        ratio, z = np.exp(d), d / scale
        self.batches.append(_Batch(kind, of, np.asarray(ids, dtype=np.int64), what, group, pattern, ratio, z,
                                   (z > self.z) & (ratio > self.min_ratio)))

    def judged(self):
        return sum(b.ids.size for b in self.batches)

    def outliers(self):
        return sum(int(b.outlier.sum()) for b in self.batches)

    def tallies(self, of):
        """(ids, comparisons, outliers) of every item of kind `of`, ids in order of first judging."""
        bs = [b for b in self.batches if b.of == of]
        if not bs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=int), np.zeros(0, dtype=int)
        ids = np.concatenate([b.ids for b in bs])
        out = np.concatenate([b.outlier for b in bs])
        uk, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        m, k = np.bincount(inv, minlength=uk.size), np.bincount(inv, weights=out, minlength=uk.size)
        return uk[order], m[order], k[order].astype(int)

    def outliers_of(self, of, ids):
        """{id: [(kind, group, pattern, ratio, z, what)]}: the outlier comparisons of these items, in
        the order they were made (what: the batch's id -> name)."""
        want, got = np.asarray(sorted(ids), dtype=np.int64), collections.defaultdict(list)
        for b in self.batches:
            if b.of != of:
                continue
            for i in np.flatnonzero(b.outlier & np.isin(b.ids, want)):
                got[int(b.ids[i])].append((b.kind, b.group, b.pattern, float(b.ratio[i]), float(b.z[i]), b.what))
        return got


def _pair_ids(a, b):
    return np.asarray(a, dtype=np.int64) * (1 << 32) + np.asarray(b, dtype=np.int64)


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


def _links_of(cases, n):
    """(src, dst, log median, se of the sender's median) of a group's links, sorted by (src,
    dst); a link measured twice keeps its last case, as a matrix written case by case would.
    Also the floor: the median se over every link measurement."""
    parts, ses = [], []
    for c in cases:
        fl = c.flows if c.flows is not None else np.array(c.links(), dtype=np.int64).reshape(-1, 2)
        s, d = fl[:, 0].astype(np.int64), fl[:, 1].astype(np.int64)
        med, se = c.rank_medians(), c.rank_se()
        ok = (s >= 0) & (s < n) & (d >= 0) & (d < n)
        s, d = s[ok], d[ok]
        with np.errstate(invalid="ignore"):
            ok = med[s] > 0
        s, d = s[ok], d[ok]
        parts.append((s, d, np.log(med[s])))
        ses.append(se[s])
    s, d, v = (np.concatenate([p[i] for p in parts]) for i in range(3))
    se = np.concatenate(ses) if ses else np.zeros(0)
    floor = float(np.nanmedian(se)) if np.isfinite(se).any() else np.nan
    key = _pair_ids(s, d)
    last = key.size - 1 - np.unique(key[::-1], return_index=True)[1]   # sorted by key, last occurrence
    last = last[np.isfinite(v[last])]
    return s[last], d[last], v[last], floor


def _host_blocks(col, host_idx, hosts, s, d, T, label, pattern, floor):
    """Median link time per ordered host pair (a block: host A's ranks sending to host B's),
    each block judged against the other blocks of its class (intra-host or not, leave-out).
    Returns T less each link's block median: what is left for the ranks and links to explain.
    A slow direction between hosts (node2 -> node1) moves a whole block; left in, it would make
    the receivers on node1 look slow (most of their senders are on node2) and, with half of the
    cross-host links slow, inflate the spread that those links are judged by."""
    hs, hd = host_idx[s], host_idx[d]
    bkey = _pair_ids(hs, hd)
    bk, med = group_medians(bkey, T)
    inv = np.searchsorted(bk, bkey)
    count = np.bincount(inv, minlength=bk.size)
    # One rank per host: a block is one link, taking it out would leave nothing for the links,
    # senders and receivers (a host sending 25% slower to all was then never named).
    R = T if (count == 1).all() else T - med[inv]
    _, sd = robust(R)
    ba, bb = bk >> 32, bk & 0xFFFFFFFF
    for cls in (True, False):
        sel = np.flatnonzero((ba == bb) == cls)
        if sel.size < 2:
            continue
        sel = sel[sorted(range(sel.size), key=lambda i: (hosts[ba[sel[i]]], hosts[bb[sel[i]]]))]
        # the difference of two block medians: sqrt(2) x 1.2533 sd / sqrt(links)
        se = 1.7725 * sd / np.sqrt(count[sel]) if np.isfinite(sd) else np.full(sel.size, np.nan)
        col.judge_all("hostlink", HOSTLINK, bk[sel], lambda i: f"{hosts[i >> 32]}>{hosts[i & 0xFFFFFFFF]}",
                      label, pattern, med[sel], np.fmax(floor, se), leave_out=True)
    return R


class _Hosts:
    """Each rank's host as an index into the run's host names (sorted), for ranks 0..n-1."""
    def __init__(self, run, n):
        self.names = sorted({run.host_of(r) for r in range(n)})
        where = {h: i for i, h in enumerate(self.names)}
        self.of = np.array([where[run.host_of(r)] for r in range(n)], dtype=np.int64)


def _ranks_by_host(run):
    out = collections.defaultdict(list)
    for r in range(run.nranks):
        out[run.host_of(r)].append(r)
    return out


def _judge_links(col, hosts, key, cases, n):
    s, d, T, floor = _links_of(cases, n)
    label = _group_label(cases[0].attrs, key[4])
    host_idx = hosts.of
    T = _host_blocks(col, host_idx, hosts.names, s, d, T, label, key[4], floor)
    if s.size < 3:
        return
    same = host_idx[s] == host_idx[d]
    for cls in (True, False):
        sel = same == cls
        if sel.sum() >= 3:
            col.judge_all("link", LINK, _pair_ids(s[sel], d[sel]), lambda i: f"{i >> 32}>{i & 0xFFFFFFFF}",
                          label, key[4], T[sel], floor)
    for kind, who in (("sender", s), ("receiver", d)):
        active, eff = group_medians(who, T)
        if active.size >= 4:  # the judged rank against at least 3 others
            col.judge_all(kind, RANK, active, lambda i: f"rank {i}", label, key[4], eff, floor, leave_out=True)


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
    floor = np.nanmedian(c.rank_se()) if n else np.nan
    label = _group_label(c.attrs, f"{c.pattern}{c.attrs.get('step', '')}")
    for ranks in by_role.values():
        if len(ranks) < 3:
            continue
        col.judge_all("rank", RANK, ranks, lambda i: f"rank {i}", label, c.pattern, np.log(med[ranks]), floor)


@dataclasses.dataclass
class Suspect:
    kind: str             # "rank", "link" or "hostlink" (host A's ranks sending to host B's: "node2>node1")
    what: str
    host: str             # its host, or its link's hosts in its direction: "gc2->gc4" (sender -> receiver)
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


def _suspects_of(col, run, by_host, of, p0, alpha):
    """The items of kind `of` that were outliers in more comparisons than chance allows
    (by_host: _ranks_by_host(run), for a host link's member links)."""
    from scipy.stats import binom
    ids, m, k = col.tallies(of)
    two = k >= 2                                           # one outlier is never enough
    p = np.ones(ids.size)
    p[two] = binom.sf(k[two] - 1, m[two], p0)
    sel = np.flatnonzero(two & (p < alpha))
    outs = col.outliers_of(of, ids[sel])
    found = []
    for i in sel:
        out = outs[int(ids[i])]
        worst = max(out, key=lambda o: o[3])
        what = worst[5](int(ids[i]))
        if of == HOSTLINK:
            a, b = what.split(">")
            hosts, members = f"{a}->{b}", [f"{s}>{d}" for s in by_host[a] for d in by_host[b] if s != d]
        else:
            ranks = (int(ids[i]) >> 32, int(ids[i]) & 0xFFFFFFFF) if of == LINK else (int(ids[i]),)
            ends = [run.host_of(r) for r in ranks]   # in the link's direction: sender -> receiver
            hosts, members = "->".join(dict.fromkeys(ends)), []
        found.append(Suspect(of, what, hosts, int(k[i]), int(m[i]), float(np.median([o[3] for o in out])),
                             max(o[4] for o in out), sorted({o[2] for o in out}), worst[1], float(p[i]),
                             sorted({o[0] for o in out}), members))
    return found


def analyze(run: Run, z=DEFAULT_Z, min_slowdown_pct=DEFAULT_MIN_SLOWDOWN_PCT, spec=None,
            p0=DEFAULT_P0, alpha=DEFAULT_ALPHA) -> SuspectReport:
    if not z > 0:
        raise InputError(f"--z {z}: must be > 0")
    if not (0 < p0 < 1 and 0 < alpha < 1):
        raise InputError(f"--p0 {p0}, --alpha {alpha}: each must be between 0 and 1")
    col = _Collector(z, 1.0 + min_slowdown_pct / 100.0)
    cases = [c for c in run.cases if not spec or case_matches(c, spec)]
    if spec and not cases:
        raise InputError(f"{run.path}: no case matches --case")
    groups, hosts = 0, _Hosts(run, max([run.nranks] + [c.times.shape[0] for c in cases]))
    for key, cs in sorted(_link_groups(cases).items(), key=lambda kv: str(kv[0])):
        n = max(c.times.shape[0] for c in cs)
        if key[4] in LINK_PATTERNS:
            _judge_links(col, hosts, key, cs, n)
        else:
            for c in cs:
                _judge_rank_rows(col, c)
        groups += 1
    if not groups:
        raise InputError(f"{run.path}: no point-to-point case to judge (run latency, bw or bibw with "
                         "--pattern rounds or --pairs all)")
    suspects, by_host = [], _ranks_by_host(run)
    for of in (LINK, HOSTLINK, RANK):
        suspects += _suspects_of(col, run, by_host, of, p0, alpha)
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
        mine = by_host[h]
        if mine and all(r in bad_ranks for r in mine) and len(all_hosts) > 1:
            hosts.append(h)
        # Every other host slow from it (or to it), where the others are two or more: one host
        # explains it. Between two hosts, A>B slow is A's sending or B's receiving: no host named.
        others = [o for o in all_hosts if o != h]
        if h not in hosts and len(others) >= 2 and (all((h, o) in slow_dirs for o in others)
                                                    or all((o, h) in slow_dirs for o in others)):
            hosts.append(h)
    return SuspectReport(run=run, z=z, min_slowdown_pct=min_slowdown_pct, p0=p0, alpha=alpha, groups=groups,
                         judged=col.judged(), outliers=col.outliers(),
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
