"""`gdrbench export --openmetrics RUN.h5 [-o FILE]`: a run as Prometheus
metrics, in the text format node_exporter's textfile collector reads
(docs/prometheus.md). Gauges only; units in the names (_bytes_per_second,
_seconds, _ratio-less percent as _percent); every series carries the run's
commit.

The number of series is bounded whatever the run's size:
  per case    one series per metric and sweep point (test x transport x
              reference x mem x path x dtype x size x pattern); the cases of
              each link or root (--pairs all, rounds, incast steps) are folded
              into their sweep point (median over them, wrong summed), so
              `--pairs all` on N ranks gives sweep points, not N^2 series;
  per rank    at most MAX_RANK_SERIES (8192 = 1,024 hosts x 8 GPUs);
  per host    at most MAX_HOST_SERIES (1024);
  per link    only suspect links and host pairs, at most MAX_LINK_SERIES
              (1000), the slowest first.
Anything left out is counted in gdrbench_export_series_dropped{kind}.
"""

from __future__ import annotations

import math

import numpy as np

from .schema import InputError

MAX_RANK_SERIES = 8192
MAX_HOST_SERIES = 1024
MAX_LINK_SERIES = 1000

HELP = {
    "gdrbench_run_info": "the run: 1, with its version, commit, status and size as labels",
    "gdrbench_run_start_timestamp_seconds": "when the run started (Unix time)",
    "gdrbench_run_complete": "1 when the result file says status complete",
    "gdrbench_busbw_bytes_per_second": "bus bandwidth from the median of the slowest rank's times",
    "gdrbench_iteration_seconds": "median over iterations of the slowest rank's time of one iteration (test latency: the latency)",
    "gdrbench_peak_percent": "busbw as a percentage of the path's ceiling (pct_peak)",
    "gdrbench_wrong_elements": "elements that differed from the expected result (0 when correct)",
    "gdrbench_direct_over_staged_ratio": "busbw of the direct path over the staged path, same case otherwise",
    "gdrbench_rank_info": "one per rank: its host, GPU and HCA",
    "gdrbench_rank_suspect": "1 when `gdrbench suspects` names the rank",
    "gdrbench_host_suspect": "1 when `gdrbench suspects` names the host",
    "gdrbench_link_suspect_slowdown_ratio": "a suspect link or host pair: its median slowdown against its peers",
    "gdrbench_suspects_judged": "comparisons the suspect analysis made (0: nothing to judge in this run)",
    "gdrbench_export_series_dropped": "series left out to keep the export bounded",
}


def _esc(v) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v: float) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


class _Writer:
    """Samples grouped per metric family (the text format wants one block each)."""

    def __init__(self, commit):
        self.commit = commit
        self.families = {}

    def add(self, name, labels, value):
        labels = dict(labels, commit=self.commit)
        body = ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items())
        self.families.setdefault(name, []).append(f"{name}{{{body}}} {_num(value)}")

    def text(self) -> str:
        out = []
        for name, lines in self.families.items():
            out += [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *lines]
        return "\n".join(out) + "\n"


def sweep_key(c):
    """A case's sweep point: its key less the link (src, dst) and the pattern's step, so the
    cases of every link or root of one size fold into one point. `pattern` is the p2p
    pattern (`pair`, `rounds`, `incast`...) or `none` for a collective."""
    a = c.attrs
    pattern = c.pattern if ("pattern" in a or int(a["src"]) >= 0) else "none"
    return (a["test"], a["transport"], int(a["reference"]), a["mem"], a["path"], a["dtype"], int(a["bytes"]),
            pattern, int(a["ranks"]))


def sweep_points(run):
    """Per sweep point: median latency (s), median busbw (B/s), pct_peak, wrong."""
    groups = {}
    for c in run.cases:
        groups.setdefault(sweep_key(c), []).append(c)
    out = {}
    for key, cs in groups.items():
        lat = [c.median_us() for c in cs]
        bw = [c.busbw_median() for c in cs]
        pk = [float(c.attrs["pct_peak"]) for c in cs if "pct_peak" in c.attrs]
        out[key] = {"latency": _nanmedian(lat) * 1e-6, "busbw": _nanmedian(bw) * 1e9,
                    "pct_peak": _nanmedian(pk) if pk else None,
                    "wrong": sum(int(c.attrs.get("wrong", 0)) for c in cs)}
    return out


def _nanmedian(v):
    v = [x for x in v if x == x]
    return float(np.median(v)) if v else float("nan")


def _case_series(w, run):
    points = sweep_points(run)
    for (test, tr, ref, mem, path, dtype, size, pattern, ranks), p in sorted(points.items()):
        lab = {"test": test, "transport": tr, "reference": str(ref), "mem": mem, "path": path,
               "dtype": dtype, "size": str(size), "pattern": pattern, "ranks": str(ranks)}
        w.add("gdrbench_busbw_bytes_per_second", lab, p["busbw"])
        w.add("gdrbench_iteration_seconds", lab, p["latency"])
        if p["pct_peak"] is not None:
            w.add("gdrbench_peak_percent", lab, p["pct_peak"])
        w.add("gdrbench_wrong_elements", lab, p["wrong"])
    for (test, tr, ref, mem, path, dtype, size, pattern, ranks), p in sorted(points.items()):
        if path != "direct":
            continue
        staged = points.get((test, tr, ref, mem, "staged", dtype, size, pattern, ranks))
        if staged and staged["busbw"] > 0:
            lab = {"test": test, "transport": tr, "reference": str(ref), "mem": mem, "dtype": dtype,
                   "size": str(size), "pattern": pattern, "ranks": str(ranks)}
            w.add("gdrbench_direct_over_staged_ratio", lab, p["busbw"] / staged["busbw"])


def _rank_series(w, run, bad_ranks, dropped):
    n = run.nranks
    shown = list(range(min(n, MAX_RANK_SERIES)))
    if n > MAX_RANK_SERIES:  # keep every suspect rank, then the first ranks
        extra = sorted(r for r in (bad_ranks or ()) if r >= MAX_RANK_SERIES)
        shown = sorted(set(shown[:MAX_RANK_SERIES - len(extra)]) | set(extra))
    dropped["rank"] = n - len(shown)
    for r in shown:
        lab = {"rank": str(r), "host": run.host_of(r),
               "gpu": run.gpus[r] if r < len(run.gpus) else "", "hca": run.hcas[r] if r < len(run.hcas) else ""}
        w.add("gdrbench_rank_info", lab, 1)
        if bad_ranks is not None:
            w.add("gdrbench_rank_suspect", lab, int(r in bad_ranks))


def _host_series(w, run, bad_hosts, dropped):
    hosts = sorted(set(run.hosts[:run.nranks]))
    if len(hosts) > MAX_HOST_SERIES:
        keep = set(sorted(bad_hosts)[:MAX_HOST_SERIES])
        hosts = sorted(keep | set([h for h in hosts if h not in keep][:MAX_HOST_SERIES - len(keep)]))
    dropped["host"] = len(set(run.hosts[:run.nranks])) - len(hosts)
    for h in hosts:
        w.add("gdrbench_host_suspect", {"host": h}, int(h in bad_hosts))


def _link_series(w, run, suspects, dropped):
    links = sorted((s for s in suspects if s.kind in ("link", "hostlink")), key=lambda s: -s.median_ratio)
    dropped["link"] = max(0, len(links) - MAX_LINK_SERIES)
    for s in links[:MAX_LINK_SERIES]:
        a, b = s.what.split(">")
        if s.kind == "link":
            lab = {"kind": "link", "src": a, "dst": b, "src_host": run.host_of(int(a)),
                   "dst_host": run.host_of(int(b))}
        else:
            lab = {"kind": "hostlink", "src": "", "dst": "", "src_host": a, "dst_host": b}
        w.add("gdrbench_link_suspect_slowdown_ratio", lab, s.median_ratio)


def render(result, suspects_kw=None) -> str:
    """The metrics of `result` (an api.RunResult) as text."""
    run = result.run
    w = _Writer(result.commit)
    w.add("gdrbench_run_info", {"version": result.version, "status": run.status, "ranks": str(run.nranks),
                                "hosts": str(len(set(run.hosts[:run.nranks])))}, 1)
    if run.start is not None:
        w.add("gdrbench_run_start_timestamp_seconds", {}, run.start.timestamp())
    w.add("gdrbench_run_complete", {}, int(result.complete))
    _case_series(w, run)
    try:
        rep = result.suspects(**(suspects_kw or {}))
    except InputError:
        rep = None  # no point-to-point case: nothing to judge, and the export says so
    bad_ranks = None if rep is None else {int(s.what.split()[1]) for s in rep.suspects if s.what.startswith("rank ")}
    dropped = {}
    _rank_series(w, run, bad_ranks, dropped)
    w.add("gdrbench_suspects_judged", {}, 0 if rep is None else rep.judged)
    if rep is not None:
        _host_series(w, run, set(rep.hosts), dropped)
        _link_series(w, run, rep.suspects, dropped)
    for kind, n in sorted(dropped.items()):
        w.add("gdrbench_export_series_dropped", {"kind": kind}, n)
    return w.text()
