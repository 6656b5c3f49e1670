"""Slow phases: a host whose transfers slow for a while and recover, faster than a case lasts (a
NIC or link that flaps with a period of a second or two).

A case's flows are judged by their medians (factor_model.py): when a fault is on for less than
half of each case, the median stays at the fast level and the model sees nothing, while the
iterations show it plainly: a run of consecutive iterations at one slower level, then the
peers' level again. So each flow's iterations are taken relative to what the model expects of
that flow without its hosts' own factors, less the step's common part in each iteration
(tails._ratios: a stall of the whole step is nobody's), and a flow has a slow phase when RUN (3)
or more consecutive iterations are over K_PHASE (1.3) x. A host's count of flows with a phase
is judged against its peers' share (their flows without that host, pooled, at the upper end of
its 95 % interval: few peers' flows say little), as the tail is: named `intermittent` when
P < alpha under the binomial at that share (at least PHASE_FLOOR) and its own share is at least
PHASE_FOLD times it. Hosts are named one at a time, the most certain first, and a named host's
flows then leave the others' counts; the hosts named already (the model's, TCP's counts) are
left out from the start.

Why runs and not a share of slow iterations: on a loaded machine the CPU puts single slow
iterations on every host (a level of 1.3 x over single iterations named 10 of 164 healthy hosts
at 4 hosts); a flap puts them in runs, one flap phase after another. Measured by
jobs/cluster/rejudge_trials.py on 124 recorded 8-host trials
(results/archive/20261206_cluster8_validate-by-fault-class-rejudged.txt, docs/validate.md): no
healthy host of 875 named, and every intermittent fault named (21 of 21; the medians had 17).
"""

from __future__ import annotations

import numpy as np

from .intervals import wilson
from .model_parts import SIDE, Part, binom_p
from .tails import _ratios, _touch

K_PHASE = 1.3        # an iteration this many times what the model expects is slow
RUN = 3              # consecutive slow iterations that make a phase
PHASE_FLOOR = 0.02   # the peers' share of flows with a phase assumed at the least
PHASE_FOLD = 3.0     # and a named host's share is at least this many times the peers'


def _longest_run(row):
    slow = np.exp(row[np.isfinite(row)]) > K_PHASE
    best = cur = 0
    for s in slow:
        cur = cur + 1 if s else 0
        best = max(best, cur)
    return best


def has_phase(rows):
    """[F] bool: each flow's iterations hold a slow phase (RUN or more in a row over K_PHASE)."""
    return np.array([_longest_run(r) >= RUN for r in rows], bool)


def _judge(flag, src, dst, H, jd, excluded):
    """(host, k, m, p, p_ref) of the host not `excluded` most beyond its peers, or None."""
    best = None
    base = ~_touch(src, dst, excluded)
    for h in range(H):
        if h in excluded:
            continue
        mine = base & ((src == h) | (dst == h))
        peers = base & (src != h) & (dst != h)   # the others' flows, none with h
        if not mine.any() or not peers.any():
            continue
        k, m = int((flag & mine).sum()), int(mine.sum())
        # the peers' share at its upper 95 % bound: few peers' flows (4 hosts, one named) say
        # little about the healthy share, and a floor alone would name a host on 4 flows of 12
        p_ref = max(wilson(int((flag & peers).sum()), int(peers.sum()))[1], PHASE_FLOOR)
        p = binom_p(k, m, p_ref)
        if p < jd.alpha and k / m >= PHASE_FOLD * p_ref and (best is None or p < best[3]):
            best = (h, k, m, p, p_ref)
    return best


def analyze(sizes, names, jd, named=()):
    """{host: Part} the hosts with slow phases beyond chance (module doc); `named`: hosts named
    by other evidence, left out of the others' counts and not judged again."""
    # against the model without the hosts' own factors: a flap on for a third of the time can
    # give its host a factor in one size, and against it its slow phases read 1.0, its fast 0.65
    src, dst, rows = _ratios(sizes, own_factors=False)
    if not rows:
        return {}
    flag = has_phase(rows)
    H = len(names)
    excluded, found = {names.index(n) for n in named if n in names}, {}
    while (best := _judge(flag, src, dst, H, jd, excluded)) is not None:
        h, k, m, p, p_ref = best
        base = ~_touch(src, dst, excluded)
        sides = [s for s, who in (("send", src), ("recv", dst))
                 if binom_p(int((flag & base & (who == h)).sum()), int((base & (who == h)).sum()), p_ref) < jd.alpha]
        word = SIDE[sides[0]] if len(sides) == 1 else "both sides"
        mine = base & ((src == h) | (dst == h)) & flag
        slow = np.exp(np.concatenate([rows[i] for i in np.flatnonzero(mine)]))
        r = float(np.median(slow[slow > K_PHASE]))
        found[names[h]] = Part("host", "intermittent", word, (names[h],), r, k, m, float("nan"), p,
                               f"slow phases ({RUN}+ transfers in a row over {K_PHASE:g}x) in {k} of {m} of its "
                               f"flows ({100 * k / m:.0f} %, peers {100 * p_ref:.1f} %), {r:.2f}x there")
        excluded.add(h)
    return found
