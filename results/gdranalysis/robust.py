"""The robust statistics `suspects`, the retests and the simulator judge with, as arrays: a
fleet's file has millions of links, so nothing here loops over them in Python.

Each function gives exactly (bit for bit) what the plain numpy expression in its doc
gives: tests/analysis/test_suspects.py checks them against it."""

from __future__ import annotations

import numpy as np

MAD_SD = 1.4826     # median absolute deviation x this = a standard deviation, for normal data
MEDIAN_SE = 1.2533  # the standard error of a median is this x sd / sqrt(n), for normal data


def robust(v):
    """(median, MAD x 1.4826) of v's finite values; (nan, nan) when there is none."""
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


def loo_robust(values):
    """(medians, sds): for every i, exactly `robust(np.delete(values, i))`, in O(n log n)
    rather than O(n^2): judging each of a fleet's thousands of links or hosts against the
    others. The median of all but one sorted value is one of at most three; for each, the
    deviations are sorted once and the one left out is found by its position."""
    v = np.asarray(values, dtype=float)
    n = v.size
    med, sd = np.full(n, np.nan), np.full(n, np.nan)
    fin = np.flatnonzero(np.isfinite(v))
    m_all, sd_all = robust(v)
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


def _sorted_medians(s, k):
    """Row medians of `s`, each row sorted with its k valid values first (NaN where k is 0):
    the middle value, or the mean of the middle two as np.median takes it."""
    rows = np.arange(s.shape[0])
    if s.shape[1] == 0:
        return np.full(s.shape[0], np.nan)
    lo, hi = np.maximum((k - 1) // 2, 0), np.minimum(k // 2, s.shape[1] - 1)
    out = (s[rows, lo] + s[rows, hi]) / 2
    out[k == 0] = np.nan
    return out


def row_medians(x):
    """Each row's median over its non-NaN values (NaN where none): `np.median(row[~isnan(row)])`."""
    x = np.asarray(x, dtype=float)
    return _sorted_medians(np.sort(x, axis=1), np.sum(~np.isnan(x), axis=1))


def median_se_rows(times):
    """Per row of iteration times [rows, iters], the standard error (log units) of its median:
    1.2533 x the robust sd of the log of its finite positive times / sqrt(their count); NaN
    with fewer than 3. `median_se(row)` for every row."""
    t = np.asarray(times, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.where(np.isfinite(t) & (t > 0), np.log(np.where(t > 0, t, 1.0)), np.nan)
    k = np.sum(~np.isnan(lg), axis=1)
    m = row_medians(lg)
    dev = np.sort(np.abs(lg - m[:, None]), axis=1)
    sd = MAD_SD * _sorted_medians(dev, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = MEDIAN_SE * sd / np.sqrt(k)
    se[k < 3] = np.nan
    return se


def median_se(times):
    """The standard error (log units) of the median of one rank's iterations."""
    t = times[np.isfinite(times) & (times > 0)]
    if t.size < 3:
        return np.nan
    _, sd = robust(np.log(t))
    return MEDIAN_SE * sd / np.sqrt(t.size)


def group_medians(keys, values):
    """(unique keys, the median of each key's values): `np.median(values[keys == k])` for every
    key, in one sort; NaN values are left out of their group (a group of none: NaN)."""
    keys, values = np.asarray(keys), np.asarray(values, dtype=float)
    order = np.lexsort((values, keys))             # by key, then value (NaN last in each key)
    ks, vs = keys[order], values[order]
    uk, start, count = np.unique(ks, return_index=True, return_counts=True)
    valid = np.add.reduceat(~np.isnan(vs), start) if vs.size else np.zeros(0, dtype=int)
    lo, hi = start + np.maximum((valid - 1) // 2, 0), start + np.maximum(valid // 2, 0)
    hi = np.minimum(hi, start + count - 1)
    out = (vs[lo] + vs[hi]) / 2 if vs.size else np.zeros(0)
    out[valid == 0] = np.nan
    return uk, out
