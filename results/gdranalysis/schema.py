"""Reading gdrbench result files (results/README.md, schema_version 1 and 2).

`load_run(path)` reads a whole file eagerly and checks it against the
schema; anything a reader cannot trust raises `InputError` with one line
that says what is wrong, which the command line turns into exit status 2.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import re
import signal
import traceback
import warnings
from datetime import datetime, timezone

import numpy as np

from . import SCHEMA_VERSION
from . import numbers
from .errors import InputError  # re-exported: the package's callers import it from here
from . import inputs
from .h5values import as_scalar, as_text
from .schema_patterns import read_flows, read_links

# The fields that identify a case across runs (see compare).
KEY_FIELDS = ("test", "transport", "reference", "mem", "path", "dtype", "op",
              "bytes", "ranks", "src", "dst")
INT_FIELDS = {"reference", "ranks", "bytes", "count", "iters", "warmup", "check",
              "src", "dst", "window", "chunk_bytes", "wrong"}
STR_FIELDS = {"test", "transport", "mem", "path", "dtype", "op"}
REQUIRED_CASE_ATTRS = STR_FIELDS | {"reference", "ranks", "bytes", "src", "dst"}
REQUIRED_ROOT_ATTRS = ("schema_version",)
# What a test is (collectives/test.h's TestTraits) comes from each case's own
# attributes: test_kind, directions, and window_means / chunk_means where the
# test has a window or a chunk. Files written before gdrbench wrote them carry
# only the test's name: these four rows stand in for them there, and are the
# only place the analysis knows a test by its name.
LEGACY_TRAITS = {
    "allreduce": {"test_kind": "collective", "directions": 1, "window": False, "chunk": True},
    "latency": {"test_kind": "latency", "directions": 1, "window": False, "chunk": False},
    "bw": {"test_kind": "bandwidth", "directions": 1, "window": True, "chunk": False},
    "bibw": {"test_kind": "bandwidth", "directions": 2, "window": True, "chunk": False},
}
KIND_ORDER = ("collective", "latency", "bandwidth")
MAX_RANKS = 1 << 24  # more than any machine has; a bigger count is a damaged file


class HDF5LibraryError(InputError):
    """libhdf5 hung or crashed on a (corrupt) file: read in a child, see load_run."""


@dataclasses.dataclass
class Case:
    """One `/cases/NNNNN` group."""

    name: str                 # "00012"
    attrs: dict               # every attribute, Python scalars
    times: np.ndarray         # [ranks, iters] seconds, NaN where a rank sat out
    occurrence: int = 1       # >1 when the same key appears again in one file
    flows: np.ndarray | None = None  # concurrent pattern: [k, 2] (sender, receiver)
    # A summary read (load_run(summary=True)) keeps each rank's median and its standard error
    # in place of the iterations, and `times` is [ranks, 0].
    medians: np.ndarray | None = None
    median_se: np.ndarray | None = None

    @property
    def key(self) -> tuple:
        k = case_key(self.attrs)
        return k if self.occurrence == 1 else k + (self.occurrence,)

    @property
    def summarized(self) -> bool:
        """Read as a summary (load_run(summary=True)): its ranks' medians, no iterations."""
        return self.times.shape[1] == 0 and self.medians is not None

    @property
    def pattern(self) -> str:
        """`pair` (one pair at a time) or the concurrent pattern's name."""
        return str(self.attrs.get("pattern", "pair"))

    def links(self) -> list:
        """The (sender, receiver) links this case ran: its flows, or its pair."""
        if self.flows is not None:
            return [(int(a), int(b)) for a, b in self.flows]
        return [(self.attrs["src"], self.attrs["dst"])] if self.attrs["src"] >= 0 else []

    def get(self, field, default=None):
        return self.attrs.get(field, default)

    def slowest(self) -> np.ndarray:
        """Per-iteration time of the slowest rank (seconds), iterations in
        which no rank has a time dropped."""
        t = self.times
        if t.size == 0:
            return np.empty(0)
        ok = ~np.all(np.isnan(t), axis=0)
        if not ok.any():
            return np.empty(0)
        return np.nanmax(t[:, ok], axis=0)

    def rank_medians(self) -> np.ndarray:
        """Median over iterations of each rank's time (seconds); NaN for a
        rank that sat the case out."""
        if self.medians is None:
            from .robust import row_medians
            self.medians = row_medians(self.times)
        return self.medians

    def rank_se(self) -> np.ndarray:
        """Per rank, the standard error (log units) of its median (robust.median_se_rows)."""
        if self.median_se is None:
            from .robust import median_se_rows
            self.median_se = median_se_rows(self.times)
        return self.median_se

    def summarize(self):
        """Keep each rank's median and its standard error, drop the iterations."""
        self.rank_medians(), self.rank_se()
        self.times = np.empty((self.times.shape[0], 0))

    def median_us(self) -> float:
        """Median over iterations of the slowest rank's time, microseconds."""
        s = self.slowest()
        s = s[np.isfinite(s)]
        return float(np.median(s) * 1e6) if s.size else float("nan")

    def busbw_median(self, median_us=None) -> float:
        """Bus bandwidth (GB/s) from the median time rather than the mean:
        the stored busbw_gbps scaled by time_us_mean / median (median_us: another time's, in us)."""
        m = self.median_us() if median_us is None else median_us
        bw, mean = self.attrs.get("busbw_gbps"), self.attrs.get("time_us_mean")
        if bw is None or mean is None or not (m > 0):
            return float("nan")
        return float(bw) * float(mean) / m

    def label(self, with_ranks=False) -> str:
        """Short human name: `allreduce mpi host direct float sum 1M`."""
        a = self.attrs
        parts = [a["test"]]
        if a["src"] >= 0:
            parts[0] += f"{a['src']}>{a['dst']}"
        if "pattern" in a:
            parts[0] += f"@{a['pattern']}{a.get('step', '')}"
        parts.append(a["transport"] + ("*" if a["reference"] else ""))
        parts += [a["mem"], a["path"]]
        if a["dtype"] != "byte":
            parts += [a["dtype"], a["op"]]
        parts.append(format_bytes(a["bytes"]))
        if with_ranks:
            parts.append(f"{a['ranks']}r")
        if self.occurrence > 1:
            parts.append(f"#{self.occurrence}")
        return " ".join(parts)

    def key_dict(self) -> dict:
        d = {f: self.attrs[f] for f in KEY_FIELDS}
        if self.occurrence > 1:
            d["occurrence"] = self.occurrence
        return d


@dataclasses.dataclass
class Run:
    """One result file."""

    path: str
    attrs: dict
    hosts: list
    local_ranks: list
    facts: dict
    environment: dict
    cases: list
    warnings: list
    links: dict = dataclasses.field(default_factory=dict)  # /links/<name>: see links.py
    gpus: list = dataclasses.field(default_factory=list)  # /ranks/gpu, "" per rank where none/absent
    hcas: list = dataclasses.field(default_factory=list)  # /ranks/hca

    @property
    def schema_version(self) -> int:
        return int(self.attrs["schema_version"])

    @property
    def status(self) -> str:
        return str(self.attrs.get("status", "unknown"))

    @property
    def start(self) -> datetime | None:
        return parse_utc(self.attrs.get("start_utc", ""))

    @property
    def nranks(self) -> int:
        r = self.attrs.get("ranks")
        return int(r) if r is not None else len(self.hosts)

    def host_of(self, rank: int) -> str:
        return self.hosts[rank] if 0 <= rank < len(self.hosts) else "?"

    def device_of(self, rank: int) -> str:
        """'GPU/HCA' of a rank ('0000:3B:00.0 NVIDIA H200/mlx5_0:1', 'rxe0:1'), '' when neither is known."""
        g, h = (v[rank] if 0 <= rank < len(v) else "" for v in (self.gpus, self.hcas))
        return "/".join(x for x in (g, h) if x)

    def by_key(self) -> dict:
        return {c.key: c for c in self.cases}

    def describe(self) -> str:
        """One line: file, when, where, what."""
        hosts = sorted(set(self.hosts))
        where = hosts[0] if len(hosts) == 1 else f"{len(hosts)} hosts"
        return (f"{os.path.basename(self.path)}: {self.attrs.get('start_utc', '?')}, "
                f"{self.nranks} ranks on {where}, gdrbench {self.attrs.get('gdrbench_version', '?')} "
                f"({self.attrs.get('git_commit', '?')}), {len(self.cases)} cases, {self.status}")


def case_key(a: dict) -> tuple:
    """KEY_FIELDS, plus pattern and step for a concurrent pattern's case."""
    k = tuple(a[f] for f in KEY_FIELDS)
    return k + (a["pattern"], a.get("step", -1)) if "pattern" in a else k


def parse_utc(s) -> datetime | None:
    s = as_text(s)
    if not isinstance(s, str) or not s:
        return None
    try:
        return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        try:
            d = datetime.fromisoformat(s.replace("Z", "+00:00"))
            return d if d.tzinfo else d.replace(tzinfo=timezone.utc)
        except ValueError:
            return None


def format_bytes(n: int) -> str:
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)[bB]?\s*$")


def parse_bytes(s: str) -> int:
    """`1048576`, `1M`, `64K`, `2G` (powers of 1024, as `gdrbench run -b`)."""
    m = _SIZE.match(str(s))
    if not m:
        raise ValueError(f"not a size: {s!r} (use e.g. 1048576, 64K, 1M)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


# How long reading one file may take before it counts as corrupt. libhdf5
# (1.10, Debian 12) can loop forever on some corrupt files (found by
# tests/fuzz: a damaged global heap makes reading a string attribute spin),
# and a bad file can crash it outright; so the file is read in a forked
# child, and a child that hangs or dies becomes an InputError.
READ_TIMEOUT_S = None  # set by a caller (the fuzzer) instead of the environment


def read_timeout_s() -> float:
    """GDR_READ_TIMEOUT: seconds, [1, 86400] (numbers.BOUNDS): below a second a good file's
    read, forked, could outlast it and be called corrupt; garbage is one line and exit 2."""
    return numbers.env("GDR_READ_TIMEOUT", 120.0)


def load_run(path: str, summary: bool = False) -> Run:
    """Read and check one result file. Raises InputError. summary: each case keeps its ranks'
    medians and their standard errors, not the iterations, and /links is not read (Run.links
    {}): what `suspects` and `validate` judge, in O(cases x ranks) memory, where the
    iterations of a fleet's file are O(cases x ranks x iterations), and its link matrices
    [sizes, ranks, ranks]."""
    _precheck(path)
    timeout = READ_TIMEOUT_S or read_timeout_s()
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork (not Linux): read in this process
        return _load_here(path, summary)
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_load_in_child, args=(send, path, summary), daemon=True)
    child.start()
    send.close()
    try:
        if not recv.poll(timeout):
            child.kill()
            raise HDF5LibraryError(f"{path}: reading it took more than {timeout:g} s; the file is "
                             "corrupt (the HDF5 library is stuck in it)")
        try:
            kind, value = recv.recv()
        except EOFError:
            child.join()
            code = child.exitcode
            if code == -signal.SIGKILL:  # the kernel's out-of-memory killer, not the file
                raise HDF5LibraryError(_killed_reading(path, summary)) from None
            how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
            raise HDF5LibraryError(f"{path}: the HDF5 library crashed reading it ({how}); "
                             "the file is corrupt") from None
    finally:
        recv.close()
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
    if kind == "run":
        return value
    if kind == "input":
        raise InputError(value)
    raise RuntimeError(f"reading {path} failed inside gdranalysis (a bug):\n{value}")


def _killed_reading(path, summary):
    """Why a reader killed by SIGKILL most likely died: memory (a 1,024 x 8 file of every host
    pair, 5.8 GB, took 24 GB to read whole), said with the sizes, not blamed on the file."""
    size = os.path.getsize(path) / 1e9
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    what = ("its ranks' medians" if summary else
            "every iteration and link matrix (`suspects` and `validate` read the ranks' medians only)")
    return (f"{path}: the reader was killed (signal 9), most likely out of memory: reading {what} of "
            f"{size:.1f} GB on a machine of {mem:.0f} GiB")


def _load_in_child(send, path, summary):
    try:
        try:
            out = ("run", _load_here(path, summary))
        except InputError as e:
            out = ("input", str(e))
        except BaseException:  # a bug: hand the traceback to the parent
            out = ("bug", traceback.format_exc())
        try:
            send.send(out)
        except BaseException:  # the result would not pickle: also a bug
            send.send(("bug", traceback.format_exc()))
    finally:
        send.close()


def _precheck(path):
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a result file")
    inputs.regular(path, path)


def _load_here(path: str, summary: bool = False) -> Run:
    """load_run's work, in this process (no protection against libhdf5)."""
    _precheck(path)
    try:
        import h5py
    except ImportError as e:  # pragma: no cover - the deps file installs it
        raise InputError(f"cannot import h5py ({e}); install python3-h5py") from e
    try:
        is_h5 = h5py.is_hdf5(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e})") from e
    if not is_h5:
        raise InputError(f"{path}: not an HDF5 file")
    try:
        with h5py.File(path, "r") as f:
            return _read(path, f, summary)
    except InputError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        # HDF5 file locking: another process (a run still going) holds it open
        # for writing. Nothing is wrong with the file.
        if isinstance(e, BlockingIOError) or "unable to lock file" in msg:
            raise InputError(f"{path}: locked: another process is writing it (a run still going?); "
                             "read it after that process ends, or set HDF5_USE_FILE_LOCKING=FALSE "
                             "to read what it has flushed so far") from e
        raise InputError(f"{path}: unreadable HDF5 file, truncated or corrupt ({msg})") from e


def _read(path, f, summary=False) -> Run:
    v = _schema_version(path, f)
    attrs = {k: as_scalar(val) for k, val in f.attrs.items()}
    status = attrs.get("status", "")
    run_warnings = _status_warnings(path, attrs, status)
    nranks = _rank_count(path, attrs)
    max_bytes = 16 * os.path.getsize(path) + (1 << 20)
    hosts, local, devices = _rank_lists(path, f, max_bytes)
    facts = {k: as_scalar(v) for k, v in f["facts"].attrs.items()} if "facts" in f else {}
    env = {k: as_scalar(v) for k, v in f["environment"].attrs.items()} if "environment" in f else {}
    cases = _read_cases(path, f, v, status, max_bytes, summary, run_warnings)
    if not hosts:
        hosts = ["?"] * min(nranks, max_bytes)
    return Run(path=path, attrs=attrs, hosts=hosts, local_ranks=local, facts=facts,
               environment=env, cases=cases, warnings=run_warnings,
               links={} if summary else read_links(path, f, nranks),
               gpus=devices["gpu"], hcas=devices["hca"])


def _schema_version(path, f) -> int:
    """The file's schema_version, one this package reads, and a /cases group."""
    if "schema_version" not in f.attrs:
        raise InputError(f"{path}: not a gdrbench result file (no schema_version attribute)")
    v = as_scalar(f.attrs["schema_version"])
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InputError(f"{path}: schema_version {v!r} is not an integer")
    if v > SCHEMA_VERSION:
        raise InputError(f"{path}: schema_version {v} is newer than this analysis reads "
                         f"(up to {SCHEMA_VERSION}); use the gdrbench that wrote it")
    if v < 1:
        raise InputError(f"{path}: schema_version {v} is not a gdrbench schema")
    if "cases" not in f or not hasattr(f["cases"], "items"):
        raise InputError(f"{path}: not a gdrbench result file (no /cases group)")
    return v


def _status_warnings(path, attrs, status) -> list:
    """The run's warnings for a run that did not end `complete`."""
    run_warnings = []
    if status == "running":
        run_warnings.append(f"{path}: status 'running': the writer died; cases completed before it are used")
    elif status in ("failed", "interrupted"):
        run_warnings.append(f"{path}: status '{status}' ({attrs.get('error', '')}); "
                            "cases completed before it are used")
    return run_warnings


def _rank_count(path, attrs) -> int:
    """The root's `ranks`, checked, written back into attrs as an int."""
    try:
        nranks = int(attrs.get("ranks", 0) or 0)
    except (TypeError, ValueError, OverflowError):
        nranks = -1
    if not 0 <= nranks <= MAX_RANKS:
        raise InputError(f"{path}: attribute ranks={attrs.get('ranks')!r} is not a rank count")
    if "ranks" in attrs:
        attrs["ranks"] = nranks
    return nranks


def _rank_lists(path, f, max_bytes):
    """/ranks: hosts, local ranks and {"gpu": [...], "hca": [...]}, each a list a rank."""
    import h5py
    hosts, local, devices = [], [], {"gpu": [], "hca": []}
    if "ranks" in f and hasattr(f["ranks"], "keys"):
        for n in ("host", "local_rank", "gpu", "hca"):
            if n in f["ranks"] and (not isinstance(f["ranks"][n], h5py.Dataset)
                                    or len(f["ranks"][n].shape or ()) != 1
                                    or f["ranks"][n].shape[0] > min(MAX_RANKS, max_bytes)):
                raise InputError(f"{path}: /ranks/{n} is not a list of ranks")
        if "host" in f["ranks"]:
            hosts = [str(as_text(h)) for h in f["ranks/host"][()]]
        if "local_rank" in f["ranks"]:
            local = [int(x) for x in f["ranks/local_rank"][()]]
        devices = {n: [str(as_text(x)) for x in f["ranks"][n][()]] if n in f["ranks"] else []
                   for n in ("gpu", "hca")}
    return hosts, local, devices


def _read_cases(path, f, v, status, max_bytes, summary, run_warnings) -> list:
    """Every case of /cases. A run that did not end `complete` (a full disk, a
    kill) may hold a case cut short as it was written: that case is left out
    with a note in run_warnings, the others are used. In a `complete` file any
    damage is an error."""
    cases, seen, cut = [], {}, []
    for name in sorted(f["cases"].keys()):
        try:
            cases.append(_read_case(path, f, name, v, max_bytes, seen, summary))
        except (InputError, OSError, KeyError, ValueError) as e:
            if status == "complete":
                raise
            cut.append(name)
            if len(cut) == 1:
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                run_warnings.append(f"{path}: case {name} is incomplete ({why}); left out")
    if len(cut) > 1:
        run_warnings.append(f"{path}: {len(cut)} incomplete case(s) left out in all ({', '.join(cut[:5])}"
                            f"{', ...' if len(cut) > 5 else ''})")
    return cases


def _read_case(path, f, name, v, max_bytes, seen, summary) -> Case:
    """One case; `seen` counts the cases read so far by key (a case's occurrence)."""
    g = f["cases"][name]
    a = _case_attrs(path, name, g, v)
    t = _case_times(path, name, g, a, max_bytes)
    key = case_key(a)
    seen[key] = seen.get(key, 0) + 1
    fl = read_flows(path, name, g, a) if "pattern" in a else None
    c = Case(name=name, attrs=a, times=t, occurrence=seen[key], flows=fl)
    if summary:
        c.summarize()
    return c


def _case_attrs(path, name, g, v) -> dict:
    """A case's attributes, checked and typed, as schema version 2 has them."""
    a = {k: as_scalar(val) for k, val in g.attrs.items()}
    missing = sorted(REQUIRED_CASE_ATTRS - a.keys())
    if missing:
        raise InputError(f"{path}: case {name} lacks attribute(s) {', '.join(missing)}")
    for k in INT_FIELDS & a.keys():
        try:
            a[k] = int(a[k])
        except (TypeError, ValueError, OverflowError) as e:
            raise InputError(f"{path}: case {name}: attribute {k}={a[k]!r} is not an integer") from e
    for k in STR_FIELDS:
        a[k] = str(a[k])
    if "pattern" in a:
        a["pattern"] = str(a["pattern"])
        try:
            a["step"] = int(a.get("step", -1))
        except (TypeError, ValueError, OverflowError) as e:
            raise InputError(f"{path}: case {name}: attribute step={a.get('step')!r} is not an integer") from e
    if v < 2:
        _as_version_2(a)
    return a


def _case_times(path, name, g, a, max_bytes):
    """A case's `times`, [ranks, iters] float64, read only when its shape fits."""
    import h5py
    if "times" not in g or not isinstance(g["times"], h5py.Dataset):
        raise InputError(f"{path}: case {name} has no 'times' dataset")
    shape = g["times"].shape or ()
    if len(shape) not in (1, 2):
        raise InputError(f"{path}: case {name}: 'times' has shape {shape}, expected [ranks, iters]")
    # Never read more than the case says it holds: a damaged shape (or an
    # unwritten chunked dataset) could make numpy allocate gigabytes.
    n = float(np.prod(shape, dtype=np.float64))
    if "iters" in a and n > max(a["ranks"], 1) * max(a["iters"], 1):
        raise InputError(f"{path}: case {name}: 'times' has shape {shape}, more than "
                         f"ranks x iters = {a['ranks']} x {a['iters']}")
    if n * 8 > max_bytes:  # gdrbench stores times raw; allow 16x for a compressing copy
        raise InputError(f"{path}: case {name}: 'times' has shape {shape}, more than the "
                         "file can hold")
    t = np.asarray(g["times"][()], dtype=np.float64)
    if t.ndim == 1:
        t = t[np.newaxis, :]
    if t.ndim != 2:
        raise InputError(f"{path}: case {name}: 'times' has shape {t.shape}, expected [ranks, iters]")
    return t


def _legacy(a) -> dict:
    return LEGACY_TRAITS.get(a.get("test"), {"test_kind": "collective", "directions": 1, "window": False,
                                             "chunk": False})


def test_kind(a) -> str:
    """`collective`, `latency` (a round trip, time one way) or `bandwidth` (time per message)."""
    return str(a["test_kind"]) if "test_kind" in a else _legacy(a)["test_kind"]


def directions(a) -> int:
    """2 where both ends send at once (bibw): bytes moved = directions x bytes."""
    return int(a["directions"]) if "directions" in a else _legacy(a)["directions"]


def point_to_point(a) -> bool:
    return test_kind(a) != "collective"


def test_order(a) -> tuple:
    """Collectives, then latency, then bandwidth tests, one-way first: the order of plots."""
    k = test_kind(a)
    return (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER), directions(a), str(a.get("test")))


def uses_window(a) -> bool:
    """As src/record/results.cpp: the rows of a test with a window, with their reference rows."""
    return "window_means" in a if "test_kind" in a else _legacy(a)["window"]


def uses_chunk(a) -> bool:
    """As src/record/results.cpp: our rows of a test with a chunk, not the libraries' collectives."""
    return "chunk_means" in a if "test_kind" in a else _legacy(a)["chunk"] and not a.get("reference")


def _as_version_2(a):
    """A version 1 case as version 2 would hold it, so that files of both
    versions compare alike: no `window`/`chunk_bytes` where they meant
    nothing, and allreduce busbw 0 at one rank (version 1 stored algbw)."""
    if not uses_window(a):
        a.pop("window", None)
    if not uses_chunk(a):
        a.pop("chunk_bytes", None)
    if test_kind(a) == "collective" and a.get("ranks") == 1 and "busbw_gbps" in a:
        a["busbw_gbps"] = 0.0


def load_runs(paths, *, skip_bad=False, warn=None):
    """Load several files. With skip_bad, files that fail are reported
    through `warn(msg)` and left out; otherwise the first failure raises."""
    runs = []
    for p in paths:
        try:
            runs.append(load_run(p))
        except InputError as e:
            if not skip_bad:
                raise
            (warn or warnings.warn)(f"skipped {e}")
    return runs


# ---- selecting cases: "test=allreduce,transport=mpi,bytes=1M" ------------------

SPEC_FIELDS = KEY_FIELDS + ("count", "iters", "warmup", "window", "chunk_bytes", "check")


def parse_case_spec(spec: str) -> dict:
    """`key=value,key=value` over the case fields; sizes accept K/M/G."""
    out = {}
    if spec is None:
        return out
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if "=" not in part:
            raise InputError(f"--case: '{part}' is not key=value (keys: {', '.join(SPEC_FIELDS)})")
        k, v = (x.strip() for x in part.split("=", 1))
        if k == "size":
            k = "bytes"
        if k not in SPEC_FIELDS:
            raise InputError(f"--case: unknown key '{k}' (keys: {', '.join(SPEC_FIELDS)})")
        if k in out:  # the last one silently winning would answer another question
            raise InputError(f"--case: key '{k}' given twice")
        if k in ("bytes", "chunk_bytes"):
            try:
                out[k] = parse_bytes(v)
            except ValueError as e:
                raise InputError(f"--case: {k}: {e}") from None
        elif k == "reference":
            lv = v.lower()
            if lv not in ("0", "1", "true", "false", "yes", "no"):
                raise InputError(f"--case: reference={v}: use 0 or 1")
            out[k] = 1 if lv in ("1", "true", "yes") else 0
        elif k in INT_FIELDS:
            try:
                out[k] = int(v)
            except ValueError:
                raise InputError(f"--case: {k}={v}: not an integer") from None
        else:
            out[k] = v
    return out


def case_matches(case: Case, spec: dict) -> bool:
    return all(case.attrs.get(k) == v for k, v in spec.items())
