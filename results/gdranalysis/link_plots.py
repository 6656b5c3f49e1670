"""Heat maps of the link matrix (links.py): ranks x ranks, and per host pair."""

from __future__ import annotations

import numpy as np

from .plots import _png, plt
from .schema import format_bytes


def rank_labels(run) -> list:
    """Axis label per rank: 'rank host' and, where /ranks/gpu or /ranks/hca say, its GPU/HCA
    ('2 node2 rxe0:1', '0 gpu01 0000:3B:00.0 NVIDIA H200/mlx5_0:1')."""
    return [" ".join(x for x in (str(r), run.host_of(r), run.device_of(r)) if x) for r in range(run.nranks)]


def link_heatmap(table, hosts, size_index=-1, labels=None) -> bytes | None:
    """One size of a LinkTable: rank matrix and host-aggregate matrix side by side.
    Bandwidth tests show GB/s (dark = slow), latency shows one-way us (dark = slow).
    labels: one per rank (rank_labels), else 'rank host'."""
    lat = table.test_kind == "latency"
    field = "time_us" if lat else "algbw_gbps"
    m = getattr(table, field)[size_index]
    if not np.isfinite(m).any():
        return None
    agg, names = table.host_aggregate(hosts, field)
    agg = agg[size_index]
    n = table.ranks
    fig, axes = plt.subplots(1, 2, figsize=(min(4 + 0.35 * n, 14) + 4, min(3 + 0.3 * n, 12)),
                             gridspec_kw={"width_ratios": [max(n, 1), max(len(names), 1)]})
    cmap = plt.get_cmap("viridis" if not lat else "viridis_r").copy()
    cmap.set_bad("#e0e0e0")
    finite = m[np.isfinite(m)]
    vmin, vmax = float(finite.min()), float(finite.max())
    if labels is None or len(labels) < n:
        labels = [f"{r} {hosts[r] if r < len(hosts) else '?'}" for r in range(n)]
    for ax, mat, labels, what in ((axes[0], m, list(labels[:n]), "rank"),
                                  (axes[1], agg, names, "host")):
        im = ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
        step = max(1, len(labels) // 32)
        ax.set_xticks(range(0, len(labels), step))
        ax.set_xticklabels(labels[::step], rotation=90, fontsize=7)
        ax.set_yticks(range(0, len(labels), step))
        ax.set_yticklabels(labels[::step], fontsize=7)
        ax.set_xlabel(f"receiver {what}")
        ax.set_ylabel(f"sender {what}" if not lat else f"initiator {what}")
        if mat.size <= 64:
            for (i, j), v in np.ndenumerate(mat):
                if np.isfinite(v):
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=6, color="w")
    fig.colorbar(im, ax=axes, fraction=0.04, pad=0.02).set_label("one-way us" if lat else "GB/s")
    fig.suptitle(f"{table.test} {table.transport} {table.mem} {table.path} ({table.pattern}), "
                 f"{format_bytes(int(table.bytes[size_index]))}: per link and per host pair (median)",
                 fontsize=10)
    return _png(fig)


def host_pair_heatmap(table, names, size_index=-1) -> bytes | None:
    """One size of a host-level LinkTable (links.host_pair_tables): one panel, sender host rows,
    receiver host columns, the median over each host pair's links; a fleet's report draws this
    where a per-rank matrix has millions of cells."""
    lat = table.test_kind == "latency"
    m = getattr(table, "time_us" if lat else "algbw_gbps")[size_index]
    if not np.isfinite(m).any():
        return None
    n = len(names)
    fig, ax = plt.subplots(figsize=(min(4 + 0.35 * n, 14), min(3 + 0.3 * n, 12)))
    cmap = plt.get_cmap("viridis" if not lat else "viridis_r").copy()
    cmap.set_bad("#e0e0e0")
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, interpolation="nearest")
    step = max(1, n // 32)
    ax.set_xticks(range(0, n, step))
    ax.set_xticklabels(names[::step], rotation=90, fontsize=7)
    ax.set_yticks(range(0, n, step))
    ax.set_yticklabels(names[::step], fontsize=7)
    ax.set_xlabel("receiver host")
    ax.set_ylabel("sender host" if not lat else "initiator host")
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02).set_label("one-way us" if lat else "GB/s")
    ax.set_title(f"{table.test} {table.transport} {table.mem} {table.path} ({table.pattern}), "
                 f"{format_bytes(int(table.bytes[size_index]))}: per host pair (median over its links)", fontsize=10)
    fig.tight_layout()
    return _png(fig)
