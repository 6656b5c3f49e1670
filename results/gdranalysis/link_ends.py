"""A slow link, or the host at one of its ends: which the evidence points to.

The model names a link a->b when that direction is slow in more sizes than chance allows and
neither host is named (factor_model._links). A NIC that flaps can give exactly that: its slow
phases fall now on one partner's transfers and now on another's, too few to name the host, and
twice on the same partner, which is enough for a link. The verdict then names the healthy
partner beside the bad host, which the fleet drains.

So a link's two ends are weighed against each other on their flows with everyone else. Per flow,
the evidence is a slow median (factor_model._slow_flows) or a slow phase (phases.py). The
reference is the share of flows with evidence among the flows that touch neither end, at the
upper end of its 95 % interval. An end whose other flows hold evidence beyond that share
(P < ALPHA) while the other end's do not is named instead of the link: `intermittent`, on the
side(s) its evidence is on. Where both ends, or neither, stand out, the link stays. This is a
choice between the two ends of a part already beyond chance, not a new accusation: hence the
reference without a floor and the looser ALPHA than a host's own naming (1e-3).

A real slow link leaves its ends' other flows at their peers' level, and stays a link (the
recorded and simulated link faults of results/archive/20261206_link-ends-check.txt, and
tests/analysis/test_link_ends.py).
"""

from __future__ import annotations

import numpy as np

from .intervals import wilson
from .model_parts import SIDE, Part, binom_p

ALPHA = 0.01


def flow_evidence(sizes, fl):
    """(src, dst, flag) per flow of every size: a slow median (`fl`, factor_model._slow_flows
    of the same sizes) or a slow phase."""
    from .phases import has_phase
    from .tails import _ratios
    phase = [has_phase(_ratios([sz], own_factors=False)[2]) if sz.y.shape[1] else np.zeros(sz.med.size, bool)
             for sz in sizes]
    return fl["src"], fl["dst"], fl["slow"] | np.concatenate(phase)


def _end(ev, e, o, p_ref):
    """(k, m, p, sides) of end e's flows that do not touch the other end o."""
    src, dst, flag = ev
    mine = ((src == e) | (dst == e)) & (src != o) & (dst != o)
    k, m = int((flag & mine).sum()), int(mine.sum())
    sides = [s for s, who in (("send", src), ("recv", dst)) if (flag & mine & (who == e)).any()]
    return k, m, binom_p(k, m, p_ref), sides


def resolve(links, ev, names):
    """(links kept, {host: Part} named instead of a link) (module doc)."""
    src, dst, flag = ev
    kept, hosts = [], {}
    for link in links:
        a, b = (names.index(h) for h in link.hosts)
        apart = (src != a) & (dst != a) & (src != b) & (dst != b)
        p_ref = wilson(int((flag & apart).sum()), int(apart.sum()))[1] if apart.any() else 1.0
        ends = {e: _end(ev, e, o, p_ref) for e, o in ((a, b), (b, a))}
        beyond = [e for e, (_, _, p, _) in ends.items() if p < ALPHA]
        if len(beyond) != 1:
            kept.append(link)
            continue
        e = beyond[0]
        if names[e] in hosts:
            continue
        k, m, p, sides = ends[e]
        word = SIDE[sides[0]] if len(sides) == 1 else "both sides"
        hosts[names[e]] = Part("host", "intermittent", word, (names[e],), link.slower, k + link.outlier_in,
                               m + link.measured_in, link.max_z, p,
                               f"slow toward {link.side} ({link.evidence}), and in {k} of {m} of its flows with "
                               f"its other partners (slow, or slow phases) against {100 * p_ref:.1f} % of "
                               f"its peers': the host, not the link")
    # a host named here ends its other links too (their other end is judged without it)
    return [p for p in kept if not set(p.hosts) & set(hosts)], hosts

