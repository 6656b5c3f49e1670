"""One reader of numbers for the analysis commands: every numeric flag,
environment variable and model-file or table field goes through `check`, with
its bounds from one table (BOUNDS). A value that is not a number, not finite,
of the wrong type or out of range is one line naming the value, where it came
from and the range allowed, and exit 2 (an InputError, or argparse's error
line): never a traceback, NaN in an output, or work without bound.

The sizes of work (hosts, ranks, trials, iterations, rows) have upper bounds
that keep memory and time bounded; docs/operators/numbers.md prints this table
(`markdown_rows`), and a docs test keeps the two in step.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re

from .errors import InputError

YEAR_S, WEEK_S, DAY_S = 365 * 86400, 7 * 86400, 86400


@dataclasses.dataclass(frozen=True)
class Bound:
    kind: type          # int or float
    lo: float
    hi: float
    why: str
    open_lo: bool = False
    open_hi: bool = False
    size: bool = False  # a byte count: 64K, 1M as `run -b` (powers of 1024)
    percent: bool = False  # a trailing % is allowed

    def text(self) -> str:
        """The range as the error line and the docs table write it."""
        if self.size:
            return f"a size from {_size_text(self.lo)} to {_size_text(self.hi)} (K, M, G: powers of 1024)"
        lo, hi = _plain(self.lo), _plain(self.hi)
        if self.kind is int:
            return f"a whole number from {int(self.lo) + self.open_lo} to {int(self.hi) - self.open_hi}"
        return f"a number {'above' if self.open_lo else 'from'} {lo}, {'below' if self.open_hi else 'at most'} {hi}"


def _plain(v):
    """1000000 written out (as the binary writes its ranges), 0.5 as 0.5."""
    return f"{v:.0f}" if v == int(v) and abs(v) < 1e15 else f"{v:g}"


def _size_text(n):
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and int(n) % (1 << k) == 0:
            return f"{int(n) >> k}{unit}"
    return str(int(n))


_PROB = dict(kind=float, lo=0, hi=1, open_lo=True, open_hi=True)
_SEED = Bound(int, 0, 2**32 - 1, "numpy's and scipy's seeds")
_Z = Bound(float, 0, 1e6, "robust sd above the peers' median", open_lo=True)
_SLOW = Bound(float, 0, 1000, "percent; the run's --live-min-slowdown takes at most 1000", open_lo=True)

_PCT = Bound(float, 0, 1e4, "percent", percent=True)
_CONF = Bound(why="confidence level", **_PROB)
_RESAMPLES = Bound(int, 100, 1_000_000, "bootstrap resamples: 1e6 of a 10,000-iteration case take a minute")

# name -> its bounds. A name is the flag as typed after its command, the
# environment variable, or FILE-KIND field.
BOUNDS = {
    # compare, stragglers, suspects, report, baseline
    "compare --threshold": _PCT,
    "compare --confidence": _CONF,
    "compare --resamples": _RESAMPLES,
    "compare --seed": _SEED,
    "compare --run-noise": Bound(float, 0, 1000, "sd in percent; or auto, off", percent=True),
    "stragglers --threshold": _PCT,
    "suspects --z": _Z,
    "suspects --min-slowdown": _PCT,
    "suspects --p0": Bound(why="outliers per comparison in a healthy run", **_PROB),
    "suspects --alpha": Bound(why="chance of that many outliers under --p0", **_PROB),
    "report --threshold": _PCT,
    "report --straggler-threshold": _PCT,
    "report --seed": _SEED,
    "baseline --min-runs": Bound(int, 2, 1_000_000, "past runs an item needs"),
    "baseline --min-drop": _PCT,
    "baseline --k": Bound(float, 0, 100, "CUSUM allowance, sd"),
    "baseline --h": Bound(float, 0, 1e6, "CUSUM decision interval, sd", open_lo=True),
    "baseline --clip": Bound(float, 0, 1e6, "largest z one run adds", open_lo=True),
    # validate: refused before anything is launched
    "validate --budget": Bound(float, 0, WEEK_S, "seconds; run --budget takes at most a week", open_lo=True),
    "validate --ranks-per-host": Bound(int, 1, 256, "ranks on one host; the plan is O(ranks) steps"),
    "validate --max-rounds": Bound(int, 0, 65536, "0: every round"),
    "validate --retest-rounds": Bound(int, 1, 20, "as run --retest-rounds"),
    "validate --window": Bound(int, 1, 1_000_000, "as run --window"),
    "validate --warmup": Bound(int, 0, 1_000_000, "untimed iterations per case"),
    "validate --timeout": Bound(int, 1, DAY_S, "seconds of one wait"),
    "validate --min-slowdown": _SLOW,
    "validate --z": _Z,
    "validate --p0": Bound(why="outliers per comparison in a healthy run", **_PROB),
    "validate --min-bytes": Bound(int, 1, 1 << 30, "bytes of the smallest message", size=True),
    "validate --max-bytes": Bound(int, 1, 1 << 30, "bytes of the largest message", size=True),
    "validate hosts": Bound(int, 1, 16384, "hosts in the hostfile or allocation"),
    "validate ranks": Bound(int, 1, 65536, "hosts x ranks per host: the rounds are O(ranks) steps"),
    # simulate trials and fleet
    "simulate --ranks-per-host": Bound(int, 1, 64, "ranks (GPUs) per simulated host"),
    "simulate --seed": _SEED,
    "simulate --z": _Z,
    "simulate --min-slowdown": _SLOW,
    "simulate --p0": Bound(why="as validate --p0", **_PROB),
    "simulate --alpha": Bound(why="as suspects --alpha", **_PROB),
    "simulate --trials": Bound(int, 1, 100_000, "trials per host count and cell"),
    "simulate trials --hosts": Bound(int, 3, 256, "hosts of one written file: O(ranks^2) links"),
    "simulate trials ranks": Bound(int, 3, 1024, "hosts x ranks per host of one written file"),
    "simulate fleet --hosts": Bound(int, 3, 4096, "hosts of one plane: O(hosts^2) memory"),
    "simulate fleet --gpus": Bound(int, 1, 64, "rail planes per host"),
    "simulate fleet --case-time": Bound(float, 0, DAY_S, "seconds", open_lo=True),
    "simulate fleet --check": Bound(int, 0, 10_000, "files of 6 and 12 hosts written"),
    "simulate fleet --max-rounds": Bound(int, 0, 4096, "0: every round"),
    "simulate fleet --bad-hosts": Bound(int, 1, 4096, "faults per trial; at most the hosts a fault can take"),
    "simulate --cells severity": Bound(float, 0, 1000, "percent slower", open_lo=True),
    # noise model files (simulate fit writes them, --noise reads them)
    "noise-model bytes": Bound(int, 1, 1 << 40, "message sizes, at most 64 of them"),
    "noise-model base_s": Bound(float, 0, 3600, "median link time, seconds", open_lo=True),
    "noise-model iters": Bound(int, 1, 10_000, "iterations a simulated case draws"),
    "noise-model sd": Bound(float, 0, 10, "persist_sd, size_sd, tail_excess: log units"),
    "noise-model share": Bound(float, 0, 1, "tail_p, tail_up"),
    "noise-model iter_q": Bound(float, -100, 100, "log(time / median); 2 to 1000 quantiles a size"),
    "noise-model links": Bound(int, 0, 10**12, "residuals fitted"),
    # simulate table: the rows simulate fleet --out wrote
    "fleet-rows count": Bound(int, 0, 10**12, "hosts, gpus, trials, found, wrong_hosts, ..."),
    "fleet-rows seconds": Bound(float, 0, 10**12, "schedule_s_*"),
    "fleet-rows share": Bound(float, 0, 1, "alpha, the intervals' ends"),
    "fleet-rows lines": Bound(int, 1, 1_000_000, "rows of one table file"),
    # environment
    "GDR_READ_TIMEOUT": Bound(float, 1, DAY_S, "seconds one file's read may take before it counts as stuck"),
}

NOISE_SIZES_MAX = 64


def check(value, name, source=None, bound=None):
    """`value` (text or a number read from a file) as the table's type, or an
    InputError: '<source> <value>: want <range> (<why>)'."""
    b = bound or BOUNDS[name]
    v = _convert(value, b)
    if v is None or not _inside(v, b):
        raise InputError(f"{name if source is None else source} {_shown(value)}: want {b.text()} ({b.why})")
    return v


def _convert(value, b):
    """The value as the bound's type, or None (not a number of that type)."""
    if isinstance(value, bool) or value is None:
        return None
    if b.size:
        return _size(value)
    v = value
    if not isinstance(value, (int, float)):
        s = str(value).strip()
        s = s[:-1] if b.percent and s.endswith("%") else s
        if b.kind is int:  # a whole number as digits: 1e3 and 2.0 are refused, as run's flags
            return int(s) if re.fullmatch(r"[+-]?\d{1,30}", s) else None
        try:
            v = float(s)
        except ValueError:
            return None
    if b.kind is int:
        return int(v) if isinstance(v, int) or (math.isfinite(v) and v == int(v)) else None
    return float(v)


_SIZE = re.compile(r"^\s*(\d{1,20})\s*([kKmMgGtT]?)[bB]?\s*$")


def _size(value):
    m = _SIZE.match(str(value))
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m.group(2).lower()] if m else None


def _inside(v, b):
    if not math.isfinite(v):
        return False
    return (b.lo < v if b.open_lo else b.lo <= v) and (v < b.hi if b.open_hi else v <= b.hi)


def _shown(value):
    s = str(value)
    s = s if len(s) <= 40 else s[:40] + "..."
    return repr(s) if not s.isprintable() or " " in s or not s else s


def arg(name):
    """An argparse type for the flag `name` of the table: argparse prints
    'argument --flag: <value>: want <range> (<why>)' and exits 2."""
    def parse(text):
        try:
            return check(text, name, source="")
        except InputError as e:
            raise argparse.ArgumentTypeError(str(e).strip()) from None
    parse.__name__ = name.split()[-1].lstrip("-").replace("-", "_")  # argparse names the type in errors
    return parse


def int_list(text, name, source):
    """A comma list of whole numbers, each checked ('--hosts 4,8')."""
    items = [x.strip() for x in str(text).split(",") if x.strip()]
    if not items:
        raise InputError(f"{source} {_shown(text)}: want a comma list of {BOUNDS[name].text()}")
    return [check(x, name, source=source) for x in items]


def env(name, default):
    """The environment variable `name` through the table; `default` when unset or empty."""
    v = os.environ.get(name, "")
    return default if not v else check(v, name, source=f"environment {name}=")


def field(d, key, name, source):
    """d[key] of a file's record, checked as the table's `name`; missing is refused too."""
    if not isinstance(d, dict) or key not in d:
        raise InputError(f"{source}: no field '{key}' (want {BOUNDS[name].text()})")
    return check(d[key], name, source=f"{source}: {key}")


def markdown_rows():
    """The table of docs/operators/numbers.md, one row per name."""
    out = []
    for name, b in BOUNDS.items():
        kind = "size" if b.size else "whole number" if b.kind is int else "number"
        out.append(f"| `{name}` | {kind} | {b.text()} | {b.why} |")
    return out
