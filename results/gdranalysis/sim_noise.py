"""The noise model of `gdrbench simulate`, fitted to real result files.

From real `bw` `rounds` runs (one rank per host, as `validate` runs them) it
takes, per message size, what `suspects` looks at: each link's median time
(the sender's median over its iterations, in log units) and the spread of
the iterations around it. A link's log median, less the median over the
run's links of that size, is its residual r[link, size]; it splits into

- a persistent part p[link] (the mean over sizes: a link a little slower
  in every size), normal with sd `persist_sd`;
- a per-size part e[link, size] = r - p: normal with sd `size_sd`, except
  with probability `tail_p` a tail event (|e| more than 4 sd), which is what
  makes a healthy link an outlier now and then. A tail event's excess over
  4 sd is exponential with the observed mean excess (peaks over a threshold,
  shape 0), slower with the observed share `tail_up`: so a fleet of 10^7
  links can draw deviations larger than the ~10^3 real ones showed.

Iterations: the empirical quantiles of log(t_iter / link median) per size.
Links that touch a faulted host (`exclude`) are left out of the fit, so the
faulted trials of the emulated cluster add healthy links too.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from . import inputs, numbers
from .schema import InputError, directions, load_run, test_kind

MODEL_MAX_BYTES = 16 << 20   # simulate fit writes a few KiB
MAD_SD = 1.4826
TAIL_SD = 4.0      # a per-size deviation beyond this many sd is a tail event
QUANTILES = 41     # stored quantiles of the iteration residuals


@dataclasses.dataclass
class NoiseModel:
    sources: list          # the files fitted, basenames
    links: int             # (link, size) residuals fitted
    bytes: list            # message sizes
    base_s: list           # median link time per size, seconds
    iters: list            # iterations per case per size (median over files)
    persist_sd: float      # log units
    size_sd: float
    tail_p: float
    tail_up: float         # share of tail events that are slower
    tail_excess: float     # mean |e| - 4 sd of the tail events, log units
    iter_q: list           # [size][QUANTILES] quantiles of log(t / median)

    def as_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, path):
        try:
            d = json.loads(inputs.read_text(path, path, MODEL_MAX_BYTES))
            return cls(**_checked_fields(d, path))
        except (OSError, ValueError, TypeError) as e:
            raise InputError(f"{path}: not a noise model ({str(e)[:200]})") from None

    def draw_residuals(self, rng, nlinks):
        """[nlinks, sizes] residuals of healthy links, log units."""
        s = len(self.bytes)
        p = rng.normal(0.0, self.persist_sd, size=(nlinks, 1))
        e = rng.normal(0.0, self.size_sd, size=(nlinks, s))
        if self.tail_p > 0:
            hit = rng.random((nlinks, s)) < self.tail_p
            k = int(hit.sum())
            mag = TAIL_SD * self.size_sd + rng.exponential(max(self.tail_excess, 1e-9), size=k)
            e[hit] = np.where(rng.random(k) < self.tail_up, mag, -mag)
        return p + e

    def draw_iterations(self, rng, k, log_median, n):
        """n iteration times (s) of size index k whose median is exactly exp(log_median)."""
        q = np.asarray(self.iter_q[k])
        x = np.interp(rng.random(n), np.linspace(0, 1, len(q)), q)
        return np.exp(log_median + x - np.median(x))


def _checked_fields(d, path):
    """A model file's fields, each number through numbers.check (its bounds keep a
    simulated file's memory bounded); the per-size lists as long as `bytes`."""
    if not isinstance(d, dict):
        raise ValueError("want a JSON object")
    src = f"{path}:"
    sizes = d.get("bytes")
    if not isinstance(sizes, list) or not 1 <= len(sizes) <= numbers.NOISE_SIZES_MAX:
        raise InputError(f"{src} bytes: want a list of 1 to {numbers.NOISE_SIZES_MAX} message sizes")
    for key, name in (("bytes", "noise-model bytes"), ("base_s", "noise-model base_s"),
                      ("iters", "noise-model iters"), ("iter_q", None)):
        v = d.get(key)
        if not isinstance(v, list) or len(v) != len(sizes):
            raise InputError(f"{src} {key}: want a list of {len(sizes)} values, one per size")
        for i, x in enumerate(v):
            if name:
                numbers.check(x, name, source=f"{src} {key}[{i}]")
            elif not isinstance(x, list) or not 2 <= len(x) <= 1000:
                raise InputError(f"{src} iter_q[{i}]: want a list of 2 to 1000 quantiles")
            else:
                for j, q in enumerate(x):
                    numbers.check(q, "noise-model iter_q", source=f"{src} iter_q[{i}][{j}]")
    for key in ("persist_sd", "size_sd", "tail_excess"):
        numbers.field(d, key, "noise-model sd", src)
    for key in ("tail_p", "tail_up"):
        numbers.field(d, key, "noise-model share", src)
    numbers.field(d, "links", "noise-model links", src)
    if not isinstance(d.get("sources"), list):
        raise InputError(f"{src} sources: want a list of file names")
    return d


def _name(p):
    """The file's last two path parts (validate writes run1.h5 into one folder per trial)."""
    return os.path.join(os.path.basename(os.path.dirname(os.path.abspath(p))), os.path.basename(p))


def _link_residuals(run, exclude):
    """{bytes: ({(s, d): log median}, [iteration residuals], iters)} of a bw rounds run."""
    out = {}
    for c in run.cases:
        a = c.attrs
        one_way_bw = test_kind(a) == "bandwidth" and directions(a) == 1
        if not one_way_bw or c.pattern != "rounds" or a["reference"]:
            continue
        med = c.rank_medians()
        slot = out.setdefault(a["bytes"], ({}, [], []))
        for s, d in c.links():
            if run.host_of(s) in exclude or run.host_of(d) in exclude or not med[s] > 0:
                continue
            t = c.times[s][np.isfinite(c.times[s]) & (c.times[s] > 0)]
            slot[0][(s, d)] = float(np.log(med[s]))
            slot[1].extend(np.log(t / med[s]).tolist())
            slot[2].append(t.size)
    return out


def fit(paths, exclude=None) -> NoiseModel:
    """Fit to real files; exclude: {path: hosts whose links are left out (a fault's target)}."""
    exclude = exclude or {}
    per_size, resid_rows = {}, []
    for p in paths:
        run = load_run(p)
        got = _link_residuals(run, set(exclude.get(p, ())))
        if not got:
            raise InputError(f"{p}: no bw rounds case to fit a noise model to")
        sizes = sorted(got)
        links = set.intersection(*(set(got[b][0]) for b in sizes))
        centre = {b: float(np.median([got[b][0][l] for l in links])) for b in sizes}
        for l in sorted(links):
            resid_rows.append((tuple(sizes), [got[b][0][l] - centre[b] for b in sizes]))
        for b in sizes:
            d = per_size.setdefault(b, {"base": [], "iters": [], "it": []})
            d["base"].append(centre[b])
            d["iters"] += got[b][2]
            d["it"] += got[b][1]
    sizes = sorted(per_size)
    rows = np.array([r for sz, r in resid_rows if list(sz) == sizes])
    if rows.shape[0] < 6:
        raise InputError("fewer than 6 links measured in every size: too little to fit a noise model")
    pm = rows.mean(axis=1)
    dev = rows - pm[:, None]
    k = rows.shape[1]
    # a deviation from the mean of k values has sd size_sd * sqrt((k-1)/k)
    size_sd = MAD_SD * float(np.median(np.abs(dev))) / np.sqrt((k - 1) / k)
    pm_sd = MAD_SD * float(np.median(np.abs(pm - np.median(pm))))
    persist_sd = float(np.sqrt(max(0.0, pm_sd ** 2 - size_sd ** 2 / k)))
    e = dev.ravel() / np.sqrt((k - 1) / k)
    tail = e[np.abs(e) > TAIL_SD * size_sd]
    return NoiseModel(
        sources=[_name(p) for p in paths], links=int(rows.size), bytes=[int(b) for b in sizes],
        base_s=[float(np.exp(np.median(per_size[b]["base"]))) for b in sizes],
        iters=[int(np.median(per_size[b]["iters"])) for b in sizes],
        persist_sd=persist_sd, size_sd=size_sd, tail_p=float(tail.size / e.size),
        tail_up=float(np.mean(tail > 0)) if tail.size else 0.5,
        tail_excess=float(np.mean(np.abs(tail)) - TAIL_SD * size_sd) if tail.size else 0.0,
        iter_q=[np.quantile(per_size[b]["it"], np.linspace(0, 1, QUANTILES)).tolist() for b in sizes])
