"""matplotlib figures for the report and history; each returns PNG bytes
(or writes a file). Headless: the Agg backend, no display needed."""

from __future__ import annotations

import io
import math
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator  # noqa: E402

from .links import host_ids  # noqa: E402
from .robust import group_medians  # noqa: E402
from .schema import Case, Run, format_bytes, test_kind, test_order  # noqa: E402

DPI = 100


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _ordered(attrs) -> list:
    """The test names of these case attributes, collectives first (schema.test_order)."""
    first = {}
    for a in attrs:
        first.setdefault(a["test"], a)
    return sorted(first, key=lambda t: test_order(first[t]))


def _tests(cases):
    return _ordered(c.attrs for c in cases)


def _bytes_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: format_bytes(int(round(x))) if x >= 1 else ""))
    ax.set_xlabel("message size (bytes)")
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)


def median_us(c: Case) -> float:
    """The median over iterations of the slowest rank's time; of a summary read's case (no
    iterations), the slowest rank's median, which is at most that (report says which)."""
    if not c.summarized:
        return c.median_us()
    m = c.rank_medians()
    m = m[np.isfinite(m)]
    return float(m.max() * 1e6) if m.size else float("nan")


def busbw_median(c: Case) -> float:
    """Bus bandwidth (GB/s) at median_us(c): the stored busbw_gbps scaled by time_us_mean / it."""
    return c.busbw_median(median_us(c))


def series_name(c: Case, multi_dtype: bool) -> str:
    a = c.attrs
    name = a["transport"] + (" (library)" if a["reference"] else "")
    name += f" {a['mem']}/{a['path']}"
    if multi_dtype and a["dtype"] != "byte":
        name += f" {a['dtype']}/{a['op']}"
    return name


def _series(cases, value):
    """{series: {bytes: [values over p2p pairs]}}"""
    multi = len({(c.attrs["dtype"], c.attrs["op"]) for c in cases}) > 1
    out = defaultdict(lambda: defaultdict(list))
    for c in cases:
        v = value(c)
        if np.isfinite(v) and v > 0:
            out[series_name(c, multi)][c.attrs["bytes"]].append(v)
    return out


def _style(i):
    markers = "os^vD<>ph*"
    return dict(marker=markers[i % len(markers)], markersize=4, linewidth=1.4)


def metric_vs_size(run: Run, metric: str) -> bytes | None:
    """busbw or latency against message size: one panel per test, one line
    per transport/memory/path; p2p tests with several pairs show the median
    over pairs and a min..max band."""
    value, ylabel, title = {
        "busbw": (busbw_median, "bus bandwidth (GB/s)", "Bus bandwidth vs message size"),
        "latency": (median_us, "time (us)", "Time vs message size"),
    }[metric]
    tests = _tests(run.cases)
    if not tests:
        return None
    n = len(tests)
    ncol = min(2, n)
    nrow = math.ceil(n / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(6.2 * ncol, 4.2 * nrow), squeeze=False)
    for ax, test in zip(axes.flat, tests):
        cases = [c for c in run.cases if c.attrs["test"] == test]
        kind = test_kind(cases[0].attrs)
        ser = _series(cases, value)
        for i, (name, pts) in enumerate(sorted(ser.items())):
            xs = np.array(sorted(pts))
            med = np.array([np.median(pts[x]) for x in xs])
            npairs = max(len(v) for v in pts.values())
            label = name + (f" (median of {npairs} pairs)" if npairs > 1 else "")
            ax.plot(xs, med, label=label, **_style(i))
            if npairs > 1:
                ax.fill_between(xs, [min(pts[x]) for x in xs], [max(pts[x]) for x in xs], alpha=0.15)
        _bytes_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        unit = {"latency": " (one way)", "bandwidth": " (per message)"}.get(kind, "")
        ax.set_title(f"{test}{unit if metric == 'latency' else ''}", fontsize=11)
        if ser:
            ax.legend(fontsize=8, loc="best")
        else:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    how = ("the slowest rank's median over iterations: a summary read" if any(c.summarized for c in run.cases)
           else "median over iterations of the slowest rank")
    fig.suptitle(f"{title} ({how})", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def speedup_pairs(run: Run):
    """[(series name, bytes, staged/direct)] where both paths ran."""
    by = {}
    for c in run.cases:
        k = tuple(v for f, v in c.key_dict().items() if f != "path")
        by.setdefault(k, {})[c.attrs["path"]] = c
    out = defaultdict(dict)
    for k, paths in by.items():
        if "direct" in paths and "staged" in paths:
            d, s = median_us(paths["direct"]), median_us(paths["staged"])
            if d > 0 and s > 0:
                c = paths["direct"]
                a = c.attrs
                name = f"{a['test']} {a['transport']}{' (library)' if a['reference'] else ''} {a['mem']}"
                if a["dtype"] != "byte":
                    name += f" {a['dtype']}/{a['op']}"
                if a["src"] >= 0:
                    name += f" {a['src']}>{a['dst']}"
                out[name][a["bytes"]] = s / d
    return out


def speedup(run: Run) -> bytes | None:
    sp = speedup_pairs(run)
    if not sp:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for i, (name, pts) in enumerate(sorted(sp.items())):
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], label=name, **_style(i))
    ax.axhline(1.0, color="k", linewidth=0.8, linestyle="--")
    _bytes_axis(ax)
    ax.set_yscale("log", base=2)
    vals = [v for pts in sp.values() for v in pts.values()]
    lo, hi = min(vals + [1.0]) / 1.25, max(vals + [1.0]) * 1.25
    ax.set_ylim(lo, hi)
    nice = [0.125, 0.25, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64]
    ticks = [t for t in nice if lo <= t <= hi]
    if len(ticks) > 9:
        ticks = [t for t in ticks if np.log2(t).is_integer()]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_ylabel("speedup: staged time / direct time")
    ax.set_title("Direct (GPUDirect / CUDA-aware) over host-staged: above 1 = direct is faster")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return _png(fig)


MAX_RANK_COLUMNS = 512  # above: one column a host (its ranks' median ratio), not a rank


def _by_host(names, host, ratios: np.ndarray) -> np.ndarray:
    """Per host (links.host_ids), the median of its ranks' ratios (NaN where all sat out)."""
    n = min(host.size, ratios.size)
    out = np.full(len(names), np.nan)
    keys, med = group_medians(host[:n], ratios[:n])
    out[keys] = med
    return out


def heatmap(run: Run, test: str) -> bytes | None:
    """Per-rank median time / median of rank medians, cases x ranks (x hosts above
    MAX_RANK_COLUMNS ranks: 8,192 columns of a fleet's run are no picture)."""
    rows, labels = [], []
    by_host = run.nranks > MAX_RANK_COLUMNS
    if by_host:  # once, not for each of a fleet's thousands of cases
        names, host = host_ids(run.hosts)
    for c in run.cases:
        if c.attrs["test"] != test:
            continue
        med = c.rank_medians()
        ok = np.isfinite(med) & (med > 0)
        if ok.sum() < 2:
            continue
        ratio = np.where(ok, med / np.median(med[ok]), np.nan)
        rows.append(_by_host(names, host, ratio) if by_host else ratio)
        labels.append(c.label())
    if not rows:
        return None
    nr = max(len(r) for r in rows)
    m = np.full((len(rows), nr), np.nan)
    for i, r in enumerate(rows):
        m[i, :len(r)] = r
    ratio = np.log2(m)
    span = float(np.nanmax(np.abs(ratio))) if np.isfinite(ratio).any() else 0.0
    span = min(max(span, np.log2(1.25)), 2.0)
    height = min(0.16 * len(rows) + 1.6, 60)
    width = min(max(4.5, 0.5 * nr + 4.5), 16)
    fig, ax = plt.subplots(figsize=(width, height))
    cmap = plt.get_cmap("RdBu_r").copy()
    cmap.set_bad((0, 0, 0, 0))          # transparent: the hatched background shows "sat out"
    ax.patch.set_facecolor("white")
    ax.patch.set_hatch("////")
    ax.patch.set_edgecolor("#b0b0b0")
    im = ax.imshow(np.ma.masked_invalid(ratio), aspect="auto", cmap=cmap,
                   norm=TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span), interpolation="nearest")
    ystep = max(1, len(labels) // 64)  # a fleet's run has thousands of cases: every 64th is labelled
    ax.set_yticks(range(0, len(labels), ystep))
    ax.set_yticklabels(labels[::ystep], fontsize=7)
    step = max(1, nr // 32)
    ax.set_xticks(range(0, nr, step))
    if by_host:
        ax.set_xticklabels(names[::step], rotation=90, fontsize=7)
        ax.set_xlabel("host (the median of its ranks)")
    else:
        ax.set_xticklabels([f"{r}\n{run.host_of(r)}" for r in range(0, nr, step)], fontsize=7)
        ax.set_xlabel("rank / host")
    cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
    nice = ((0.25, 0.5, 0.67, 1.0, 1.5, 2.0, 4.0) if span > np.log2(1.6)
            else (0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5))
    ticks = [np.log2(t) for t in nice if abs(np.log2(t)) <= span + 1e-9]
    cb.set_ticks(ticks)
    cb.set_ticklabels([f"{2 ** t:.3g}x" for t in ticks])
    cb.set_label("rank median / median rank")
    ax.set_title(f"{test}: per-rank time relative to the median rank (red = slower)", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def comparison(cmp) -> bytes | None:
    """Ratio new/base with its interval, per test, against message size."""
    rows = [r for r in cmp.cases if np.isfinite(r.ratio)]
    if not rows:
        return None
    tests = _ordered(r.key for r in rows)
    ncol = min(2, len(tests))
    nrow = math.ceil(len(tests) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(6.2 * ncol, 4.2 * nrow), squeeze=False)
    t = cmp.threshold_pct / 100.0
    colors = {"regression": "#d62728", "improvement": "#2ca02c", "same": "#555555", "n/a": "#bbbbbb"}
    for ax, test in zip(axes.flat, tests):
        mine = [r for r in rows if r.key["test"] == test]
        groups = defaultdict(list)
        for r in mine:
            k = r.key
            name = f"{k['transport']}{' (library)' if k['reference'] else ''} {k['mem']}/{k['path']}"
            if k["dtype"] != "byte":
                name += f" {k['dtype']}/{k['op']}"
            groups[name].append(r)
        ax.axhspan(1 - t, 1 + t, color="#cccccc", alpha=0.35, label=f"±{cmp.threshold_pct:g}% threshold")
        ax.axhline(1.0, color="k", linewidth=0.8)
        names = sorted(groups)
        for gi, name in enumerate(names):
            g = sorted(groups[name], key=lambda r: r.key["bytes"])
            off = 2 ** ((gi - (len(names) - 1) / 2) * 0.12)     # spread overlapping series
            xs = np.array([r.key["bytes"] for r in g], dtype=float) * off
            ys = np.array([r.ratio for r in g])
            lo = np.array([r.ci_low if np.isfinite(r.ci_low) else r.ratio for r in g])
            hi = np.array([r.ci_high if np.isfinite(r.ci_high) else r.ratio for r in g])
            ax.plot(xs, ys, linewidth=0.8, alpha=0.6, label=name, **{k: v for k, v in _style(gi).items() if k != "linewidth"})
            for x, y, l, h, r in zip(xs, ys, lo, hi, g):
                ax.errorbar([x], [y], yerr=[[y - l], [h - y]], fmt="o", markersize=4,
                            color=colors[r.verdict], ecolor=colors[r.verdict], capsize=2, linewidth=1)
        _bytes_axis(ax)
        ax.set_yscale("log", base=2)
        # Limits from the ratios (not the intervals, which can be huge for
        # noisy cases): at least twice the threshold band, at most 1/16..16.
        rs = np.array([r.ratio for r in mine if r.ratio > 0])
        lo_lim = max(1 / 16, min(1 - 2 * t, 0.9, float(rs.min()) / 1.15 if rs.size else 1))
        hi_lim = min(16, max(1 + 2 * t, 1.1, float(rs.max()) * 1.15 if rs.size else 1))
        ax.set_ylim(lo_lim, hi_lim)
        ticks = [x for x in (1 / 16, 1 / 8, 0.25, 0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 4, 8, 16)
                 if lo_lim <= x <= hi_lim]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:.3g}"))
        ax.set_ylabel("new / base (median time); bars clipped")
        ax.set_title(f"{test}: red = regression, green = improvement", fontsize=11)
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[len(tests):]:
        ax.axis("off")
    fig.suptitle(f"Comparison against the baseline ({cmp.confidence:.0%} intervals)", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def history_png(trends, path):
    n = len(trends)
    fig, axes = plt.subplots(n, 1, figsize=(10, 3.6 * n), squeeze=False)
    for ax, tr in zip(axes.flat, trends):
        pts = tr.points
        x = np.arange(len(pts))
        med = np.array([p.median_us for p in pts])
        ax.fill_between(x, [p.p10_us for p in pts], [p.p90_us for p in pts], alpha=0.2, label="p10..p90")
        ax.plot(x, med, marker="o", label="median")
        ax.set_xticks(x)
        ax.set_xticklabels([p.start_utc.replace("T", "\n") for p in pts], fontsize=7)
        ax.set_ylabel("time (us)")
        ax.set_title(tr.label, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    from .outputs import atomic
    with atomic(path, "--plot", "wb") as f:  # checked by the command before its work
        f.write(_png(fig))
