"""The link matrix: for each p2p test, transport, memory kind, path and
pattern that times one link per rank at a time (`pair`, `rounds`, `host-rounds`), the
median time of every link sender -> receiver per size (ranks x ranks).

gdrbench writes it under /link_cells (older files: /links) at the end of a run (src/verdicts/link_matrix.cpp);
`link_tables(run)` recomputes it from the cases with the same definition,
so files of runs that died (no /links) have one too, and the test suite
checks that both agree.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .robust import group_medians
from .schema import directions, test_kind

LINK_PATTERNS = ("pair", "rounds", "host-rounds")


def host_ids(hosts):
    """(the host names, sorted; each rank's index among them) for per-host medians."""
    names = sorted(set(hosts))
    idx = {h: i for i, h in enumerate(names)}
    return names, np.array([idx[h] for h in hosts], dtype=np.int64)


@dataclasses.dataclass
class LinkTable:
    name: str            # "bw_mpi_host_direct_rounds"
    test: str
    transport: str
    mem: str
    path: str
    pattern: str
    test_kind: str       # "latency" or "bandwidth" (schema.test_kind)
    ranks: int
    bytes: np.ndarray    # [S]
    time_us: np.ndarray  # [S, ranks, ranks] (sender, receiver), NaN where not measured
    algbw_gbps: np.ndarray

    def host_aggregate(self, hosts, field="algbw_gbps"):
        """[S, H, H] median over the links from host i's ranks to host j's, and the host names."""
        names, host = host_ids(hosts[:self.ranks])
        m = getattr(self, field)
        h = len(names)
        out = np.full((m.shape[0], h, h), np.nan)
        for s in range(m.shape[0]):  # one sort a size: a fleet has millions of links, a million host pairs
            src, dst = np.nonzero(np.isfinite(m[s]))
            if src.size:
                keys, med = group_medians(host[src] * h + host[dst], m[s][src, dst])
                out[s].flat[keys] = med
        return out, names


def link_tables(run) -> list:
    """LinkTables of `run`: from its /links when written, else from its cases."""
    if run.links:
        return [LinkTable(name=n, test=str(g["attrs"].get("test")), transport=str(g["attrs"].get("transport")),
                          mem=str(g["attrs"].get("mem")), path=str(g["attrs"].get("path")),
                          pattern=str(g["attrs"].get("pattern")), test_kind=test_kind(g["attrs"]),
                          ranks=int(g["attrs"].get("ranks", run.nranks)),
                          bytes=g["bytes"], time_us=g["time_us"], algbw_gbps=g["algbw_gbps"])
                for n, g in sorted(run.links.items())]
    return tables_from_cases(run)


def tables_from_cases(run) -> list:
    groups = {}
    for c in run.cases:
        a = c.attrs
        if a["dtype"] != "byte" or a["reference"] or c.pattern not in LINK_PATTERNS:
            continue
        key = (a["test"], a["transport"], a["mem"], a["path"], c.pattern)
        n = c.times.shape[0]
        g = groups.setdefault(key, {"ranks": n, "cells": {}, "kind": test_kind(a)})
        med = c.rank_medians()
        for s, d in c.links():
            if 0 <= s < n and 0 <= d < n:
                t = med[s]
                bw = directions(a) * float(a["bytes"]) / t / 1e9 if t > 0 else np.nan
                g["cells"].setdefault(a["bytes"], {})[(s, d)] = (t * 1e6, bw)
    out = []
    for (test, tr, mem, path, pat), g in sorted(groups.items()):
        sizes = sorted(g["cells"])
        n = g["ranks"]
        t = np.full((len(sizes), n, n), np.nan)
        bw = np.full((len(sizes), n, n), np.nan)
        for i, b in enumerate(sizes):
            for (s, d), (tu, gb) in g["cells"][b].items():
                t[i, s, d], bw[i, s, d] = tu, gb
        out.append(LinkTable(name=f"{test}_{tr}_{mem}_{path}_{pat}", test=test, transport=tr, mem=mem,
                             path=path, pattern=pat, test_kind=g["kind"], ranks=n,
                             bytes=np.array(sizes, dtype=np.int64),
                             time_us=t, algbw_gbps=bw))
    return out


def host_pair_tables(run) -> list:
    """(LinkTable over hosts, host names) per link group: each size's median over the links from
    one host's ranks to another's, from the cases' rank medians (a summary read has them). What a
    fleet's report draws: a [ranks, ranks] matrix is 8,192^2 cells a size, its per-rank picture
    shows nothing, and tables_from_cases would hold a cell object per link."""
    names, host = host_ids(run.hosts)
    H = len(names)
    groups = {}
    for c in run.cases:
        a = c.attrs
        if a["dtype"] != "byte" or a["reference"] or c.pattern not in LINK_PATTERNS:
            continue
        med = c.rank_medians()
        fl = np.asarray(c.links(), dtype=np.int64).reshape(-1, 2)
        fl = fl[(fl >= 0).all(axis=1) & (fl < min(med.size, host.size)).all(axis=1)]
        if not fl.size:
            continue
        key = (a["test"], a["transport"], a["mem"], a["path"], c.pattern)
        g = groups.setdefault(key, {"kind": test_kind(a), "dirs": directions(a), "sizes": {}})
        g["sizes"].setdefault(int(a["bytes"]), []).append((host[fl[:, 0]] * H + host[fl[:, 1]], med[fl[:, 0]]))
    out = []
    for (test, tr, mem, path, pat), g in sorted(groups.items()):
        sizes = sorted(g["sizes"])
        t = np.full((len(sizes), H, H), np.nan)
        bw = np.full((len(sizes), H, H), np.nan)
        for i, b in enumerate(sizes):
            codes = np.concatenate([k for k, _ in g["sizes"][b]])
            secs = np.concatenate([v for _, v in g["sizes"][b]])
            ok = np.isfinite(secs) & (secs > 0)
            keys, med_t = group_medians(codes[ok], secs[ok] * 1e6)
            t[i].flat[keys] = med_t
            keys, med_bw = group_medians(codes[ok], g["dirs"] * float(b) / secs[ok] / 1e9)
            bw[i].flat[keys] = med_bw
        out.append((LinkTable(name=f"{test}_{tr}_{mem}_{path}_{pat}", test=test, transport=tr, mem=mem, path=path,
                              pattern=pat, test_kind=g["kind"], ranks=H, bytes=np.array(sizes, dtype=np.int64),
                              time_us=t, algbw_gbps=bw), names))
    return out
