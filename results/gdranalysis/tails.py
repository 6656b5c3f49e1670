"""The tail of the iterations: a host whose transfers are now and then much slower (packet
loss and its retransmits) while their median hardly moves.

Each iteration of each flow is taken relative to what the factor model (factor_model.py)
expects of that flow, less the step's common slowdown in that iteration (the median over
the step's flows of their iteration, or the lower of two): a stall of the whole step is
nobody's tail. Per host (as a sender, as a receiver, both) and per link direction:
p90 and p99 of those ratios, the mean, and the share of iterations over K_TAIL x. A host's
share is counted without its partner of the largest share (a healthy host's only slow
partner is the lossy one) and judged against its peers' as medians are: named `lossy tail`
when its count of slow iterations has P < alpha under the binomial at the peers' median
share (at least TAIL_FLOOR) and its share is at least TAIL_FOLD times that.
"""

from __future__ import annotations

import numpy as np

K_TAIL = 1.5         # an iteration this many times what the model expects is in the tail
TAIL_FLOOR = 0.005   # the healthy share assumed at the least (a host's peers may show none)
TAIL_FOLD = 3.0      # and a named host's share is at least this many times the peers'


def _common(u, step):
    """[F, I] each step's common part per iteration: the median over its flows (the lower of two)."""
    c = np.zeros_like(u)
    for k in np.unique(step):
        sel = step == k
        if sel.sum() >= 3:
            c[sel] = np.nanmedian(u[sel], axis=0)
        elif sel.sum() == 2:
            c[sel] = np.nanmin(u[sel], axis=0)
    return np.where(np.isfinite(c), c, 0.0)


def _ratios(sizes):
    """(src, dst, [rows of log ratios]) of every flow with iterations, all sizes."""
    src, dst, rows = [], [], []
    for sz in sizes:
        if not sz.y.shape[1]:
            continue
        u = sz.y - sz.fit["fitted"][:, None]
        with np.errstate(all="ignore"):
            u = u - _common(u, sz.step)
        src.append(sz.src)
        dst.append(sz.dst)
        rows += list(u)
    if not rows:
        return np.zeros(0, int), np.zeros(0, int), []
    return np.concatenate(src), np.concatenate(dst), rows


def _stats(vals):
    v = vals[np.isfinite(vals)]
    if not v.size:
        return None
    r = np.exp(v)
    return {"iterations": int(v.size), "over": int((r > K_TAIL).sum()), "share_over": float((r > K_TAIL).mean()),
            "p90": float(np.quantile(r, 0.9)), "p99": float(np.quantile(r, 0.99)), "mean": float(r.mean())}


def _pool(rows, sel):
    idx = np.flatnonzero(sel)
    return np.concatenate([rows[i] for i in idx]) if idx.size else np.zeros(0)


def _host_side(rows, src, dst, h, side):
    """The host's stats on one side (or both), its partner of the largest share left out."""
    mine = (src == h) if side == "send" else (dst == h) if side == "recv" else ((src == h) | (dst == h))
    partner = np.where(src == h, dst, src)
    shares = {}
    for p in np.unique(partner[mine]):
        s = _stats(_pool(rows, mine & (partner == p)))
        if s:
            shares[int(p)] = s["share_over"]
    if len(shares) >= 2:
        mine = mine & (partner != max(shares, key=shares.get))
    return _stats(_pool(rows, mine))


def analyze(sizes, names, jd):
    """{"hosts": {h: {side: stats}}, "links": {"a->b": stats}, "named": {h: factor_model.Part}}."""
    from .factor_model import SIDE, Part, _binom_p
    src, dst, rows = _ratios(sizes)
    out = {"k": K_TAIL, "hosts": {}, "links": {}, "named": {}}
    if not rows:
        return out
    H = len(names)
    for a in range(H):
        for b in range(H):
            s = _stats(_pool(rows, (src == a) & (dst == b))) if a != b else None
            if s:
                out["links"][f"{names[a]}->{names[b]}"] = s
    per = {h: {side: _host_side(rows, src, dst, h, side) for side in ("send", "recv", "both")} for h in range(H)}
    for h in range(H):
        out["hosts"][names[h]] = {side: st for side, st in per[h].items() if st}
    for h in range(H):
        judged = {}
        for side in ("send", "recv", "both"):
            me = per[h][side]
            peers = [per[o][side]["share_over"] for o in range(H) if o != h and per[o][side]]
            if not me or not peers:
                continue
            p_ref = max(float(np.median(peers)), TAIL_FLOOR)
            p = _binom_p(me["over"], me["iterations"], p_ref)
            if p < jd.alpha and me["share_over"] >= TAIL_FOLD * p_ref:
                judged[side] = (me, p, p_ref)
        if "both" not in judged and not ({"send", "recv"} & set(judged)):
            continue
        sides = [s for s in ("send", "recv") if s in judged]
        word = SIDE[sides[0]] if len(sides) == 1 else "both sides"
        me, p, p_ref = judged.get("both") or judged[sides[0]]
        mean_peers = float(np.median([per[o]["both"]["mean"] for o in range(H) if o != h and per[o]["both"]]))
        out["named"][names[h]] = Part(
            "host", "lossy tail", word, (names[h],), me["mean"], me["over"], me["iterations"],
            float("nan"), p, f"{100 * me['share_over']:.1f} % of its transfers over {K_TAIL:g}x (peers "
            f"{100 * p_ref:.1f} %), p99 {me['p99']:.2f}x, mean {me['mean']:.2f}x against {mean_peers:.2f}x its peers'")
    return out
