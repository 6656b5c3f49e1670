"""Attribution by a model: which host side, link or step explains a run's slow transfers.

For each message size of a link pattern (`rounds`, `host-rounds`, `pair`), every flow f of
every step k (one case) has a median log time y[f] over its iterations. It is explained as

    y[f] = base + step[k] + send[host of the sender] + recv[host of the receiver] + e[f]

fitted by least absolute deviations with an L1 price on every factor (a linear program,
scipy's HiGHS; a host's side can only be slower, a step either way): the fit takes a factor only when it explains more flows than it costs, so
one slow flow stays in its residual e (it is not a step's or a host's), a step whose flows
all slowed is that step's (step-wide: it blames no host and no link), and a host whose
flows all slowed is that host's side, not its partners'. A link is what is left: a host
pair whose residuals are slow in more sizes than chance allows.

Judging, with the outlier rule of `suspects` (more than Z noise scales and more than the
min ratio slower; named when outliers in k of m comparisons have P < alpha at the healthy
rate p0):
- a host's send (receive) factor against its scale in each size: `slow`, send side,
  receive side or both sides;
- each flow's residual: a host whose flows are slow in more steps than chance allows,
  counted without its partner of most slow flows (so the healthy end of a slow link, or
  the partner of a bad host, is never named for it): `intermittent` (the share of its
  steps slow and the spread of its residuals against its peers' are its evidence);
- a host pair with slow residuals and neither end named: `link`, each slow direction, unless
  one end's flows with its other partners are slow too and the other's are not (link_ends.py:
  that end, `intermittent`);
- a step factor: `step-wide`, no host named.
Runs of slow iterations (phases.py) add `intermittent` for flaps shorter than a case; the tail
of the iterations (tails.py) adds `lossy tail`.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from .links import LINK_PATTERNS
from .model_parts import SIDE, Part, binom_p
from .robust import MAD_SD, MEDIAN_SE

PRICE = 1.0          # the L1 price of a factor, in units of one flow's absolute residual


@dataclasses.dataclass
class Size:
    """One size of one link group, at host level (flows within a host left out)."""
    label: str
    nbytes: int
    step: np.ndarray      # [F] step index within the size
    src: np.ndarray       # [F] sender's host index
    dst: np.ndarray       # [F] receiver's host index
    y: np.ndarray         # [F, I] log iteration times (NaN padded); [F, 0] from a summary read
    med: np.ndarray       # [F] log median
    se: np.ndarray        # [F] standard error of the median, log units
    fit: dict = None      # base, step [K], send [H], recv [H], resid [F], sigma
    y_recv: np.ndarray = None  # [F, I] the receiver's own log times (NaN where it has none)

    @property
    def steps(self):
        return int(self.step.max()) + 1 if self.step.size else 0


def read_sizes(run, names):
    """[Size] of every link group and size in `run` (names: sorted host names)."""
    where = {h: i for i, h in enumerate(names)}
    groups = collections.defaultdict(list)
    for c in run.cases:
        a = c.attrs
        if a["dtype"] != "byte" or a["reference"] or c.pattern not in LINK_PATTERNS:
            continue
        groups[(a["test"], a["transport"], a["mem"], a["path"], c.pattern, int(a["bytes"]))].append(c)
    out = []
    for key, cases in sorted(groups.items(), key=lambda kv: str(kv[0])):
        rows = []
        for k, c in enumerate(cases):
            med, se = c.rank_medians(), c.rank_se()
            for s, d in c.links():
                if not (0 <= s < med.size and 0 <= d < med.size) or not med[s] > 0:
                    continue
                hs, hd = where[run.host_of(s)], where[run.host_of(d)]
                if hs != hd:
                    rows.append((k, hs, hd, _log_times(c, s), np.log(med[s]), se[s], _log_times(c, d)))
        if len(rows) < 3:
            continue
        label = f"{key[0]} {key[1]} {key[2]} {key[3]} {key[4]} {key[5]} B"
        out.append(Size(label, key[5], *(np.array([r[i] for r in rows]) for i in range(3)), _padded(rows, 3),
                        np.array([r[4] for r in rows]), np.array([r[5] for r in rows], dtype=float),
                        y_recv=_padded(rows, 6)))
    return out


def _log_times(c, rank):
    """One rank's log iteration times in a case (NaN where none; empty from a summary read)."""
    t = c.times[rank] if c.times.shape[1] else np.zeros(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(t) & (t > 0), np.log(np.where(t > 0, t, 1.0)), np.nan)


def _padded(rows, i):
    width = max(max(r[3].size, r[6].size) for r in rows)
    y = np.full((len(rows), width), np.nan)
    for j, r in enumerate(rows):
        y[j, :r[i].size] = r[i]
    return y


def fit_size(sz, H, price=PRICE):
    """The penalized L1 fit of one size (module doc); stores and returns sz.fit."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, identity
    F, K = sz.med.size, sz.steps
    rows = np.arange(F)

    def block(cols, n):
        return coo_matrix((np.ones(F), (rows, cols)), shape=(F, n))
    base = coo_matrix(np.ones((F, 1)))
    fac = [block(sz.step, K), block(sz.src, H), block(sz.dst, H)]
    eye = identity(F, format="coo")
    A = hstack([base] + [m for b in fac for m in (b, -b)] + [eye, -eye]).tocsc()
    nf = 2 * (K + 2 * H)
    cost = np.concatenate([[0.0], np.full(nf, price), np.ones(2 * F)])
    # [step+, step-] free in sign; a host's side [+, -] only slower (a host faster than its
    # peers would buy back a slow link's flows from its other partners' factors at 4 hosts)
    bounds = ([(None, None)] + [(0, None)] * (2 * K) + ([(0, None)] * H + [(0, 0)] * H) * 2
              + [(0, None)] * (2 * F))
    res = linprog(cost, A_eq=A, b_eq=sz.med, bounds=bounds, method="highs")
    if res.status != 0:
        x = np.zeros(1 + nf + 2 * F)
        x[0] = float(np.median(sz.med))
    else:
        x = res.x
    parts, at = [], 1
    for n in (K, H, H):
        parts.append(x[at:at + n] - x[at + n:at + 2 * n])
        at += 2 * n
    step, send, recv = parts
    # Slowdowns are positive: where most steps' factors are below zero, the steps at zero were
    # the slow ones (a stall of half a size's steps), so the level is that of the fast ones.
    shift = min(0.0, float(np.quantile(step[np.bincount(sz.step, minlength=K) > 0], 0.25))) if K else 0.0
    x[0], step = x[0] + shift, step - shift
    fitted = x[0] + step[sz.step] + send[sz.src] + recv[sz.dst]
    resid = sz.med - fitted
    floor = float(np.nanmedian(sz.se)) if np.isfinite(sz.se).any() else 0.0
    sigma = max(MAD_SD * float(np.median(np.abs(resid - np.median(resid)))), floor, 1e-4)
    sz.fit = {"base": float(x[0]), "step": step, "send": send, "recv": recv, "fitted": fitted,
              "resid": resid, "sigma": sigma}
    return sz.fit


class Judge:
    def __init__(self, z, min_ratio, p0, alpha):
        self.z, self.lr, self.p0, self.alpha = z, np.log(min_ratio), p0, alpha

    def out(self, d, scale):
        scale = np.maximum(scale, 1e-12)
        return (d / scale > self.z) & (d > self.lr)

    def named(self, k, m):
        p = binom_p(k, m, self.p0)
        return p < self.alpha, p


def _host_sides(sizes, names, jd):
    """Hosts whose send / receive factor is an outlier in more sizes than chance allows."""
    H = len(names)
    tally = {side: np.zeros((H, 3)) for side in ("send", "recv")}   # outliers, sizes, max z
    ratios = {side: collections.defaultdict(list) for side in ("send", "recv")}
    for sz in sizes:
        f = sz.fit
        for side, who in (("send", sz.src), ("recv", sz.dst)):
            n = np.bincount(who, minlength=H)
            have = n > 0
            v = f[side]
            peers = v[have]
            spread = MAD_SD * float(np.median(np.abs(peers - np.median(peers)))) if peers.size else 0.0
            scale = np.maximum(MEDIAN_SE * f["sigma"] / np.sqrt(np.maximum(n, 1)), spread)
            o = jd.out(v, scale) & have
            t = tally[side]
            t[have, 1] += 1
            t[o, 0] += 1
            t[:, 2] = np.maximum(t[:, 2], np.where(have, v / scale, 0))
            for h in np.flatnonzero(o):
                ratios[side][h].append(float(np.exp(v[h])))
    found = {}
    for h in range(H):
        sides = []
        for side in ("send", "recv"):
            k, m, zmax = tally[side][h]
            ok, p = jd.named(int(k), int(m))
            if ok:
                sides.append((side, int(k), int(m), zmax, p, float(np.median(ratios[side][h]))))
        if sides:
            found[h] = sides
    return found




def _side_part(names, h, sides):
    word = "both sides" if len(sides) == 2 else SIDE[sides[0][0]]
    k = sum(s[1] for s in sides)
    m = sum(s[2] for s in sides)
    slower = max(s[5] for s in sides)
    ev = "; ".join(f"{SIDE[s[0]]} {s[5]:.2f}x in {s[1]}/{s[2]} sizes" for s in sides)
    return Part("host", "slow", word, (names[h],), slower, k, m, max(s[3] for s in sides),
                min(s[4] for s in sides), ev)


def _bimodal(sizes, h, part, jd):
    """A host named slow whose flows on its slow side(s) are slow in some steps and at its peers'
    level in others (a fault that is on part of the time, in the steps that happened to carry
    most of its flows on one side): `intermittent`, with the share of its steps slow."""
    ex = []
    for sz in sizes:
        f = sz.fit
        for side, who in (("send", sz.src), ("recv", sz.dst)):
            if part.side in (SIDE[side], "both sides"):
                sel = who == h
                ex.append(f["resid"][sel] + f[side][h])
    ex = np.concatenate(ex) if ex else np.zeros(0)
    slow, fast = int((ex > jd.lr).sum()), int((ex < jd.lr / 2).sum())
    if not ex.size or fast < 2 or fast < 0.2 * ex.size or slow < 0.2 * ex.size:
        return part
    r = float(np.exp(np.median(ex[ex > jd.lr])))
    return dataclasses.replace(part, cls="intermittent", slower=r, outlier_in=slow, measured_in=int(ex.size),
                               evidence=f"slow in {slow} of {ex.size} steps ({100 * slow / ex.size:.0f} %), {r:.2f}x "
                               f"there, at its peers' level in {fast}")


def _slow_flows(sizes, jd):
    """Per flow of every size: (size index, src, dst, slow?, ratio, z) as arrays."""
    cols = collections.defaultdict(list)
    for i, sz in enumerate(sizes):
        f = sz.fit
        scale = np.fmax(f["sigma"], np.nan_to_num(sz.se))
        cols["size"].append(np.full(sz.med.size, i))
        cols["src"].append(sz.src)
        cols["dst"].append(sz.dst)
        cols["slow"].append(jd.out(f["resid"], scale))
        cols["ratio"].append(np.exp(f["resid"]))
        cols["z"].append(f["resid"] / scale)
    return {k: np.concatenate(v) for k, v in cols.items()}


def _intermittent(fl, names, named, jd):
    """Hosts whose flows are slow in more steps than chance allows, named one at a time, the
    strongest first, each one's flows then explained (so the partner of an intermittent host is
    judged without them). A host qualifies when its slow flows without its partner of most slow
    flows are beyond chance, or when all of them are and two or more of those are with other
    partners (the two ends of a slow link have slow flows with each other only)."""
    H = len(names)
    partner_of = {h: np.where(fl["src"] == h, fl["dst"], fl["src"]) for h in range(H)}
    touches = {h: (fl["src"] == h) | (fl["dst"] == h) for h in range(H)}
    spread = {h: MAD_SD * float(np.median(np.abs(np.log(fl["ratio"][touches[h]])))) for h in range(H) if touches[h].any()}
    live = ~np.zeros(fl["slow"].size, bool)
    for h in named:
        live &= ~touches[names.index(h)]
    found = {}
    while True:
        best = None
        for h in range(H):
            if names[h] in named or names[h] in found:
                continue
            mine = touches[h] & live
            slow_by = np.bincount(partner_of[h][mine & fl["slow"]], minlength=H)
            keep = mine & (partner_of[h] != int(np.argmax(slow_by)))
            k_all, m_all = int((mine & fl["slow"]).sum()), int(mine.sum())
            k, m = int((keep & fl["slow"]).sum()), int(keep.sum())
            ok, p = jd.named(k, m)
            if not ok and k >= 2:
                ok, p = jd.named(k_all, m_all)
            if ok and (best is None or (k, k_all) > best[1]):
                best = (h, (k, k_all), p, mine)
        if best is None:
            break
        h, _, p, mine = best
        sel = mine & fl["slow"]
        sides = [s for s, who in (("send", fl["src"]), ("recv", fl["dst"]))
                 if jd.named(int((sel & (who == h)).sum()), int((mine & (who == h)).sum()))[0]]
        word = "both sides" if len(sides) != 1 else SIDE[sides[0]]
        k, m, r = int(sel.sum()), int(mine.sum()), float(np.median(fl["ratio"][sel]))
        peers = np.median([v for o, v in spread.items() if o != h]) if len(spread) > 1 else 0.0
        found[names[h]] = Part("host", "intermittent", word, (names[h],), r, k, m, float(fl["z"][sel].max()), p,
                               f"slow in {k} of {m} steps ({100 * k / m:.0f} %), {r:.2f}x there; spread of its "
                               f"times {100 * spread[h]:.1f} % against {100 * peers:.1f} % its peers'")
        live &= ~mine
    return found


def _links(fl, names, named, jd):
    """Directions between two hosts, neither named, slow in more sizes than chance allows."""
    out = []
    for a in range(len(names)):
        for b in range(len(names)):
            if a == b or names[a] in named or names[b] in named:
                continue
            sel = (fl["src"] == a) & (fl["dst"] == b)
            k, m = int((sel & fl["slow"]).sum()), int(sel.sum())
            ok, p = jd.named(k, m)
            if ok:
                r = float(np.median(fl["ratio"][sel & fl["slow"]]))
                out.append(Part("link", "slow", f"{names[a]}->{names[b]}", (names[a], names[b]), r, k, m,
                                float(fl["z"][sel].max()), p, f"{r:.2f}x in {k}/{m} sizes"))
    return out


def _steps(sizes, jd):
    """Steps whose flows all slowed together: (label, step, ratio) each."""
    out = []
    for sz in sizes:
        f = sz.fit
        n = np.bincount(sz.step, minlength=sz.steps)
        scale = MEDIAN_SE * f["sigma"] / np.sqrt(np.maximum(n, 1))
        for k in np.flatnonzero(jd.out(f["step"], scale) & (n >= 2)):
            out.append((sz.label, int(k), float(np.exp(f["step"][k]))))
    return out


@dataclasses.dataclass
class Attribution:
    hosts: dict            # {host: Part} the hosts named (slow, intermittent, lossy tail)
    links: list            # [Part] link directions, neither end named
    steps: list            # [(size label, step, ratio)] step-wide slowdowns: nobody blamed
    tails: dict            # tails.py's per-host and per-link table
    sizes: int

    def as_dict(self):
        return {"hosts": {h: dataclasses.asdict(p) for h, p in self.hosts.items()},
                "links": [dataclasses.asdict(p) for p in self.links],
                "step_wide": [{"size": s, "step": k, "slower": r} for s, k, r in self.steps],
                "tails": self.tails, "sizes": self.sizes}


def attribute(run, z=5.0, min_slowdown_pct=7.0, p0=0.01, alpha=1e-3, shield=()):
    """The model's verdict on a run (module doc). Reads the iterations when the run has them.
    `shield`: hosts named by other evidence (validate's TCP counts): like the hosts the model
    names, their flows are left out of their peers' tails."""
    from . import link_ends, phases, tails
    names = sorted({run.host_of(r) for r in range(run.nranks)})
    sizes = read_sizes(run, names)
    jd = Judge(z, 1.0 + min_slowdown_pct / 100.0, p0, alpha)
    for sz in sizes:
        fit_size(sz, len(names))
    hosts = {names[h]: _side_part(names, h, s) for h, s in _host_sides(sizes, names, jd).items()}
    for h in list(hosts):
        hosts[h] = _bimodal(sizes, names.index(h), hosts[h], jd)
    fl = _slow_flows(sizes, jd) if sizes else None
    if fl is not None:
        hosts.update(_intermittent(fl, names, set(hosts), jd))
    hosts.update(phases.analyze(sizes, names, jd, named=set(hosts) | (set(shield) & set(names))))
    tail = tails.analyze(sizes, names, jd, named=set(hosts) | (set(shield) & set(names))) if sizes else {"hosts": {}, "links": {}}
    for h, part in tail.pop("named", {}).items():
        if h in hosts and hosts[h].cls == "slow":
            # Slower and, beyond that slowness (the tail is taken against what the model expects,
            # its slow factor included), a tail: loss slows the median as well when it is heavy.
            hosts[h] = dataclasses.replace(hosts[h], cls="lossy tail",
                                           evidence=f"{hosts[h].evidence}; and its tail: {part.evidence}")
        hosts.setdefault(h, part)
    links = _links(fl, names, set(hosts), jd) if fl is not None else []
    if links:   # a link, or the host at one end whose other flows are slow too
        links, instead = link_ends.resolve(links, link_ends.flow_evidence(sizes, fl), names)
        hosts.update(instead)
    return Attribution(hosts, links, _steps(sizes, jd), tail, len(sizes))
