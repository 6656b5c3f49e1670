"""The parts of a result file that concurrent patterns added: a pattern case's
`flows` and the `/links` matrices (results/README.md), read and checked."""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .h5values import as_scalar


def read_flows(path, name, g, a):
    """A pattern case's /flows: [k, 2] ranks, checked."""
    import h5py
    if "flows" not in g or not isinstance(g["flows"], h5py.Dataset):
        raise InputError(f"{path}: case {name} has pattern {a['pattern']!r} but no 'flows' dataset")
    shape = g["flows"].shape or ()
    if len(shape) != 2 or shape[1] != 2 or shape[0] > max(a["ranks"], 1) ** 2:
        raise InputError(f"{path}: case {name}: 'flows' has shape {shape}, expected [flows, 2]")
    fl = np.asarray(g["flows"][()], dtype=np.int64)
    if fl.size and (fl.min() < 0 or fl.max() >= a["ranks"]):
        raise InputError(f"{path}: case {name}: 'flows' names a rank outside 0..{a['ranks'] - 1}")
    return fl


def read_links(path, f, nranks):
    """The link matrices: per group its attributes, bytes [S] and [S, ranks, ranks] matrices (NaN
    where not measured), from /link_cells (one cell per link measured) or, in older files, /links
    (the matrices themselves)."""
    import h5py
    out = {}
    for top in ("links", "link_cells"):
        if top not in f or not hasattr(f[top], "items"):
            continue
        for name, g in f[top].items():
            if not isinstance(g, h5py.Group) or "bytes" not in g:
                raise InputError(f"{path}: /{top}/{name} is not a link matrix group")
            b = np.asarray(g["bytes"][()], dtype=np.int64).reshape(-1)
            m = {"attrs": {k: as_scalar(v) for k, v in g.attrs.items()}, "bytes": b}
            if top == "link_cells":
                m.update(_cells_to_matrices(path, name, g, len(b), nranks))
            else:
                for k in ("time_us", "algbw_gbps"):
                    shape = g[k].shape if k in g else None
                    if shape != (len(b), nranks, nranks):
                        raise InputError(f"{path}: /links/{name}/{k} has shape {shape}, expected "
                                         f"({len(b)}, {nranks}, {nranks})")
                    m[k] = np.asarray(g[k][()], dtype=np.float64)
            out[str(name)] = m
    return out


def _cells_to_matrices(path, name, g, nsizes, nranks):
    """One cell per link (size index, src, dst, time_us, algbw_gbps) as [S, ranks, ranks]."""
    cols = {}
    for k in ("size", "src", "dst", "time_us", "algbw_gbps"):
        if k not in g or len(g[k].shape) != 1:
            raise InputError(f"{path}: /link_cells/{name}/{k}: want a 1-D dataset")
        cols[k] = np.asarray(g[k][()])
    n = len(cols["size"])
    if any(len(v) != n for v in cols.values()):
        raise InputError(f"{path}: /link_cells/{name}: its cell datasets differ in length")
    i, s, d = (cols[k].astype(np.int64) for k in ("size", "src", "dst"))
    if n and (i.min() < 0 or i.max() >= nsizes or min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= nranks):
        raise InputError(f"{path}: /link_cells/{name}: a cell names a size or rank out of range")
    out = {}
    for k in ("time_us", "algbw_gbps"):
        m = np.full((nsizes, nranks, nranks), np.nan)
        m[i, s, d] = cols[k].astype(np.float64)
        out[k] = m
    return out
