"""The parts of a result file that issue 15 added: a pattern case's
`flows` and the `/links` matrices (results/README.md), read and checked."""

from __future__ import annotations

import numpy as np

from .schema import InputError, _scalar


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
    """/links: per group its attributes, bytes [S] and [S, ranks, ranks] matrices."""
    import h5py
    out = {}
    if "links" not in f or not hasattr(f["links"], "items"):
        return out
    for name, g in f["links"].items():
        if not isinstance(g, h5py.Group) or "bytes" not in g:
            raise InputError(f"{path}: /links/{name} is not a link matrix group")
        b = np.asarray(g["bytes"][()], dtype=np.int64).reshape(-1)
        m = {"attrs": {k: _scalar(v) for k, v in g.attrs.items()}, "bytes": b}
        for k in ("time_us", "algbw_gbps"):
            shape = g[k].shape if k in g else None
            if shape != (len(b), nranks, nranks):
                raise InputError(f"{path}: /links/{name}/{k} has shape {shape}, expected "
                                 f"({len(b)}, {nranks}, {nranks})")
            m[k] = np.asarray(g[k][()], dtype=np.float64)
        out[str(name)] = m
    return out
