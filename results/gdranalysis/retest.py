"""The retests of a run's adaptive second phase (`gdrbench run --retest auto`, src/planning/retest.h),
recomputed from the file alone.

After the planned rounds/host-rounds steps, the run took the links that its first phase
made suspicious (each link's median log time against the other links of its group,
leave-out: more than Z robust sd and more than the min ratio slower, the outlier rule of
live verdicts and suspects), split them into parts (a rank in suspicious links with two or
more others: its sending and/or receiving side; else the link and its two halves) and
retested the parts against healthy partners in rounds. Each step is a case of pattern
`retest` whose `retest` attribute names its round and probes. This module recomputes
the suspicious links, each probe's slow/fast/unclear against the group's first-phase links, and
the verdicts (convicted after RETEST_CONFIRM slow rounds, cleared after as many fast ones), and
lists where they differ from what the run decided (facts retest.*)."""

from __future__ import annotations

import collections
import dataclasses
import json

import numpy as np

from . import robust as rb  # suspects' rule

LINK_PATTERNS = ("rounds", "host-rounds")
RETEST_CONFIRM = 2   # src/planning/retest.h kRetestConfirm


def _robust(v):
    return rb.robust(np.asarray(v, dtype=float))


def _scale(mad, floor):
    return max(mad if np.isfinite(mad) else 0.0, floor if np.isfinite(floor) else 0.0, 1e-12)


def _outlier(t, m, scale, z, min_ratio):
    d = t - m
    return bool(d / scale > z and np.exp(d) > min_ratio)


def groups(run):
    """{(test, transport, mem, path, pattern, bytes): ({link: log t}, [se])} of the first phase."""
    out = collections.defaultdict(lambda: ({}, []))
    for c in run.cases:
        a = c.attrs
        if c.pattern not in LINK_PATTERNS or a.get("reference") or a.get("dtype") != "byte":
            continue
        t, se = out[(a["test"], a["transport"], a["mem"], a["path"], c.pattern, int(a["bytes"]))]
        med, mse = c.rank_medians(), c.rank_se()
        for s, d in c.links():
            if 0 <= s < len(med) and med[s] > 0:
                t[(s, d)] = float(np.log(med[s]))
                se.append(mse[s])
    return out


def suspicious(gs, z, min_ratio):
    """The links the first phase made suspicious (src/planning/retest.cpp Retest::start)."""
    out = set()
    for t, se in gs.values():
        floor = float(np.nanmedian(se)) if np.isfinite(se).any() else np.nan
        for link, v in t.items():
            others = [u for o, u in t.items() if o != link]
            if len(others) < 3:
                continue
            m, mad = _robust(others)
            if _outlier(v, m, _scale(mad, floor), z, min_ratio):
                out.add(link)
        # each rank as a sender (receiver): its median link against the other ranks' (suspects' rule)
        for side in (0, 1):
            by = collections.defaultdict(list)
            for link, v in sorted(t.items()):
                by[link[side]].append(v)
            if len(by) < 4:
                continue
            eff = {r: float(np.median(vs)) for r, vs in by.items()}
            for r, v in eff.items():
                m, mad = _robust([u for o, u in eff.items() if o != r])
                if _outlier(v, m, _scale(mad, floor), z, min_ratio):
                    out.update(l for l in t if l[side] == r)
    return sorted(out)


@dataclasses.dataclass
class Part:
    part: str                 # "send", "recv", "link"
    a: int
    b: int = -1
    state: str = "open"       # open, convicted, cleared, explained, unresolved
    slow: int = 0
    fast: int = 0
    evidence: list = dataclasses.field(default_factory=list)
    explains: list = dataclasses.field(default_factory=list)

    @property
    def name(self):
        if self.part == "link":
            return f"link {self.a}>{self.b}"
        return f"rank {self.a} {'sending' if self.part == 'send' else 'receiving'}"


class State:
    def __init__(self, links, ranks):
        self.parts, self.healthy = [], set(range(ranks))
        left = list(links)
        while True:  # the rank in the most suspicious links, while with two or more other ranks
            nb, deg = collections.defaultdict(set), collections.Counter()
            for a, b in left:
                nb[a].add(b)
                nb[b].add(a)
                deg[a] += 1
                deg[b] += 1
            best, most = -1, 0
            for r in sorted(nb):
                if len(nb[r]) >= 2 and deg[r] > most:
                    best, most = r, deg[r]
            if best < 0:
                break
            for l in left:
                if best in l:
                    self.add("send" if l[0] == best else "recv", best).explains.append(l)
            left = [l for l in left if best not in l]
        for a, b in left:
            self.add("link", a, b)
            self.add("send", a).explains.append((a, b))
            self.add("recv", b).explains.append((a, b))

    def find(self, part, a, b=-1):
        return next((p for p in self.parts if (p.part, p.a, p.b) == (part, a, b)), None)

    def add(self, part, a, b=-1):
        p = self.find(part, a, b)
        if p is None:
            p = Part(part, a, b)
            self.parts.append(p)
            self.healthy.discard(a)
            self.healthy.discard(b)
        return p

    def update(self, probes, rnd):
        """probes: [(part, slow, what)] of one round (src/planning/retest.cpp retest::update)."""
        seen = {id(p): p for p, _, _ in probes}
        for links in (False, True):
            for p, slow, what in probes:
                if (p.part == "link") != links:
                    continue
                if not slow:
                    p.evidence.append(f"round {rnd}: fast {what}")
                    p.fast += 1
                    if p.fast >= RETEST_CONFIRM:
                        p.state = "cleared"
                    continue
                if links:
                    e1, e2 = self.find("send", p.a), self.find("recv", p.b)
                    ok = all(e is None or e.state == "cleared" for e in (e1, e2))
                    p.evidence.append(f"round {rnd}: slow {what}" + ("" if ok else " (an end not yet cleared: not counted)"))
                    if not ok:
                        continue
                else:
                    p.evidence.append(f"round {rnd}: slow {what}")
                p.slow += 1
                if p.slow >= RETEST_CONFIRM:
                    p.state = "convicted"
        for p in list(self.parts):
            if id(p) not in seen or p.part == "link":
                continue
            if p.state == "convicted":
                for l in self.parts:
                    if l.part == "link" and l.state == "open" and (l.a if p.part == "send" else l.b) == p.a:
                        l.state = "explained"
                        l.evidence.append(f"explained by {p.name}")
            if p.state == "cleared":
                for a, b in list(p.explains):
                    if self.find("link", a, b):
                        continue
                    self.add("link", a, b)
                    other, side = (b, "recv") if p.part == "send" else (a, "send")
                    self.add(side, other).explains.append((a, b))


@dataclasses.dataclass
class Report:
    suspicious: list
    group: str
    rounds: int
    verdicts: list            # [{what, state, slow_rounds, evidence}]
    problems: list            # where the file's own decisions differ from the recomputation

    def as_dict(self):
        return dataclasses.asdict(self)


def _verdicts_fact(text):
    return dict(v.rsplit("=", 1) for v in str(text).split(";") if "=" in v)


def analyze(run):
    """The retests recomputed from the file, or None when the run made none."""
    f = run.facts
    if "retest.suspicious" not in f:
        return None
    z, min_ratio = float(f["retest.z"]), float(f["retest.min_ratio"])
    gs = groups(run)
    sus = suspicious(gs, z, min_ratio)
    stored = [tuple(int(x) for x in l.split(">")) for l in str(f["retest.suspicious"]).split(",") if l]
    problems = [] if sus == stored else [f"suspicious links recomputed {sus}, the run chose {stored}"]
    steps = sorted((c for c in run.cases if c.pattern == "retest"), key=lambda c: int(c.attrs["step"]))
    if not stored or not steps:
        return Report([f"{a}>{b}" for a, b in sus], "", 0, [], problems)
    st = State(stored, run.nranks)
    healthy0 = set(st.healthy)
    by_round = collections.defaultdict(list)
    group = ""
    for c in steps:
        rec = json.loads(str(c.attrs["retest"]))
        group = rec["group"]
        a = c.attrs
        t, se = gs[(a["test"], a["transport"], a["mem"], a["path"], rec["pattern"], int(a["bytes"]))]
        # the links between ranks healthy at the start, else those not suspicious, else all (3 or more)
        base = [v for l, v in t.items() if l[0] in healthy0 and l[1] in healthy0]
        calm = [v for l, v in t.items() if l not in set(stored)]
        m, mad = _robust(base if len(base) >= 3 else calm if len(calm) >= 3 else list(t.values()))
        floor = float(np.nanmedian(se)) if np.isfinite(se).any() else np.nan
        scale = _scale(mad, floor)
        med = c.rank_medians()
        for p in rec["probes"]:
            part = (p["part"], p["a"], p["b"])  # resolved in its round: earlier rounds may add it
            v = float(np.log(med[p["src"]])) if med[p["src"]] > 0 else np.nan
            slow = not np.isfinite(v) or _outlier(v, m, scale, z, min_ratio)
            unclear = not slow and bool(np.exp(v - m) > min_ratio)   # neither slow nor fast (src/planning/retest.h)
            said = "slow" if p["slow"] else "unclear" if p.get("unclear") else "fast"
            mine = "slow" if slow else "unclear" if unclear else "fast"
            if mine != said:
                problems.append(f"round {rec['round']}: {part} recomputed {mine}, the run said {said}")
            with_ = f" with rank {p['partner']}" if p["partner"] >= 0 else ""
            what = f"{np.exp(v - m):.2f}x{with_} (z {(v - m) / scale:.1f})"
            by_round[int(rec["round"])].append((part, mine, what))
    for rnd in sorted(by_round):
        probes = []
        for k, mine, what in by_round[rnd]:
            p = st.find(*k) or st.add(*k)
            if mine == "unclear":
                p.evidence.append(f"round {rnd}: unclear {what}")
            else:
                probes.append((p, mine == "slow", what))
        st.update(probes, rnd)
    for p in st.parts:
        if p.state == "open":
            p.state = "unresolved"
    mine = {p.name: p.state for p in st.parts}
    theirs = _verdicts_fact(f.get("retest.verdicts", ""))
    if mine != theirs:
        problems.append(f"verdicts recomputed {mine}, the run said {theirs}")
    return Report([f"{a}>{b}" for a, b in stored], group, len(by_round),
                  [{"what": p.name, "state": p.state, "slow_rounds": p.slow, "evidence": "; ".join(p.evidence)}
                   for p in st.parts], problems)


def format_lines(rep):
    """The `# retest:` lines of `gdrbench suspects`."""
    if rep is None:
        return []
    if not rep.verdicts:
        return [f"# retest: no suspicious link in the first phase ({len(rep.suspicious)} recomputed)"] + \
            [f"# WARNING: retest: {p}" for p in rep.problems]
    out = [f"# retest (recomputed from the file): {len(rep.suspicious)} suspicious link(s) "
           f"({', '.join(rep.suspicious)}), {rep.rounds} round(s) in {rep.group}"]
    for v in rep.verdicts:
        out.append(f"# retest: {v['what']}: {v['state'].upper() if v['state'] == 'convicted' else v['state']}"
                   f" ({v['evidence'] or 'not probed'})")
    out += [f"# WARNING: retest: {p}" for p in rep.problems]
    return out
