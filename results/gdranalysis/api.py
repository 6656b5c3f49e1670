"""The analysis as a Python API, for notebooks and scripts (docs/python-api.md).

    from gdranalysis import load_run
    run = load_run("results/archive/RUN.h5")
    run.cases            # pandas DataFrame, one row per case
    run.iterations       # long table: case, rank, host, iteration, time_s
    run.links()          # long table of the link matrix (sender, receiver, size)
    run.suspects()       # SuspectReport (as `gdrbench suspects`)
    run.compare(other)   # Comparison (as `gdrbench compare BASE NEW`, self = base)

`gdrbench compare` and `gdrbench suspects` call these same methods (cli.py),
so the notebook and the command line cannot disagree.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import schema
from .schema import Case, Run

# Columns of RunResult.cases before the case's other attributes, in this order.
CASE_COLUMNS = ("case", "label", "test", "transport", "reference", "mem", "path", "dtype", "op",
                "bytes", "ranks", "src", "dst", "pattern", "iters", "median_us", "busbw_gbps",
                "pct_peak", "wrong")


def _case_row(c: Case) -> dict:
    a = c.attrs
    row = {"case": c.name, "label": c.label(), "pattern": c.pattern,
           "median_us": c.median_us(), "busbw_gbps": c.busbw_median(),
           "pct_peak": float(a.get("pct_peak", np.nan)), "wrong": int(a.get("wrong", 0)),
           "iters": int(c.times.shape[1]) if c.times.ndim == 2 else 0}
    for k, v in a.items():
        row.setdefault(k, v)
    return row


@dataclasses.dataclass(frozen=True)
class RunResult:
    """One gdrbench result file, read and checked (schema.Run underneath)."""

    run: Run

    @property
    def path(self) -> str:
        return self.run.path

    @property
    def status(self) -> str:
        return self.run.status

    @property
    def complete(self) -> bool:
        return self.run.status == "complete"

    @property
    def commit(self) -> str:
        return str(self.run.attrs.get("git_commit", "unknown"))

    @property
    def version(self) -> str:
        return str(self.run.attrs.get("gdrbench_version", "unknown"))

    @property
    def hosts(self) -> list:
        """Host of each rank (index = rank)."""
        return list(self.run.hosts[:self.run.nranks])

    @property
    def nranks(self) -> int:
        return self.run.nranks

    @property
    def wrong(self) -> int:
        """Wrong elements over every case (0 in a correct run)."""
        return int(sum(int(c.attrs.get("wrong", 0)) for c in self.run.cases))

    @functools.cached_property
    def cases(self):
        """One row per case: its key, the median time of the slowest rank
        (median_us), busbw from that median (GB/s), %peak, wrong, and every
        other stored attribute as a column."""
        import pandas as pd
        rows = [_case_row(c) for c in self.run.cases]
        df = pd.DataFrame(rows)
        if df.empty:
            return pd.DataFrame(columns=list(CASE_COLUMNS))
        first = [c for c in CASE_COLUMNS if c in df.columns]
        return df[first + [c for c in df.columns if c not in first]]

    @functools.cached_property
    def iterations(self):
        """Every rank's time of every iteration: columns case, rank, host,
        iteration, time_s. Ranks that sat a case out are left out (NaN)."""
        import pandas as pd
        parts = []
        for c in self.run.cases:
            t = c.times
            r, i = np.nonzero(~np.isnan(t))
            parts.append(pd.DataFrame({"case": c.name, "rank": r.astype(np.int64),
                                       "iteration": i.astype(np.int64), "time_s": t[r, i]}))
        if not parts:
            return pd.DataFrame(columns=["case", "rank", "host", "iteration", "time_s"])
        df = pd.concat(parts, ignore_index=True)
        hosts = np.array(self.run.hosts + ["?"], dtype=object)
        df.insert(2, "host", hosts[np.minimum(df["rank"].to_numpy(), len(hosts) - 1)])
        return df

    def case(self, name: str) -> Case:
        """The typed case `name` ("00012"), times as a [ranks, iters] array."""
        for c in self.run.cases:
            if c.name == name:
                return c
        raise KeyError(name)

    def links(self):
        """The link matrix as a long table: table, test, transport, mem, path,
        pattern, bytes, src, dst, src_host, dst_host, time_us, algbw_gbps;
        only measured links (from /links, else recomputed from the cases)."""
        import pandas as pd
        from .links import link_tables
        rows = []
        for t in link_tables(self.run):
            s_i, a_i, b_i = np.nonzero(np.isfinite(t.time_us))
            for s, a, b in zip(s_i, a_i, b_i):
                rows.append({"table": t.name, "test": t.test, "transport": t.transport, "mem": t.mem,
                             "path": t.path, "pattern": t.pattern, "bytes": int(t.bytes[s]),
                             "src": int(a), "dst": int(b), "src_host": self.run.host_of(int(a)),
                             "dst_host": self.run.host_of(int(b)), "time_us": float(t.time_us[s, a, b]),
                             "algbw_gbps": float(t.algbw_gbps[s, a, b])})
        cols = ["table", "test", "transport", "mem", "path", "pattern", "bytes", "src", "dst",
                "src_host", "dst_host", "time_us", "algbw_gbps"]
        return pd.DataFrame(rows, columns=cols)

    def suspects(self, *, case=None, **kw):
        """The suspect links, ranks and hosts (suspects.SuspectReport), with
        `gdrbench suspects`'s defaults; keyword arguments as suspects.analyze
        (z, min_slowdown_pct, p0, alpha); `case` is a key=value,... filter.
        Raises schema.InputError when the run has no point-to-point case."""
        from .suspects import analyze
        return analyze(self.run, spec=schema.parse_case_spec(case) if case else None, **kw)

    def compare(self, other: "RunResult | str", **kw):
        """This run as the baseline against `other` (a RunResult or a path):
        compare.Comparison, with `gdrbench compare`'s defaults; keyword
        arguments as compare.compare_runs (threshold_pct, confidence, ...)."""
        from .compare import compare_runs
        new = other if isinstance(other, RunResult) else load_run(other)
        return compare_runs(self.run, new.run, **kw)

    def describe(self) -> str:
        return self.run.describe()


def load_run(path: str, summary: bool = False) -> RunResult:
    """Read and check a result file. Raises schema.InputError (one line
    saying what is wrong) for anything that is not a readable gdrbench file.
    summary: each case keeps its ranks' medians, not the iterations (schema.load_run),
    enough for `suspects` on a fleet's file."""
    return RunResult(schema.load_run(str(path), summary))
