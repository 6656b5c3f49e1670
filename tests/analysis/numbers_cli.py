"""Helpers of the numbers tests: the analysis command line run in this process
(argparse's exit and the command's own), its stderr kept, and the bad values
each bound of gdranalysis.numbers must refuse."""

from __future__ import annotations

import contextlib
import io
import os

import gdrtest  # noqa: F401  (puts results/ on sys.path)
from gdranalysis import cli, numbers


def main(*argv, env=None):
    """(exit status, stderr) of `gdrbench ARGV`'s analysis, in this process."""
    err, out = io.StringIO(), io.StringIO()
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = cli.main(list(argv))
            except SystemExit as e:
                code = e.code
    finally:
        os.environ.clear()
        os.environ.update(old)
    return code, err.getvalue()


def bad_values(b):
    """Texts the bound must refuse: not numbers, not finite, just outside each end."""
    out = ["nan", "inf", "-inf", "abc", "", "1e400"]
    if b.size:
        return out + ["0", "-1", "1.5M", f"{int(b.hi) + 1}", "1T"]
    lo = b.lo if b.open_lo else (b.lo - 1 if b.kind is int else b.lo - max(1e-6, abs(b.lo) * 1e-3))
    hi = b.hi if b.open_hi else (b.hi + 1 if b.kind is int else b.hi * 1.001 + 1e-6)
    out += [repr(lo), repr(hi), "1e12" if b.hi < 1e12 else "-1e12"]
    if b.kind is int:
        out += [f"{int(b.lo) + 0.5}", "1e3"]
    return out


def good_values(b):
    """The ends the bound allows (an open end: just inside it)."""
    if b.size:
        return [str(int(b.lo)), f"{int(b.hi) >> 20}M"]
    if b.kind is int:
        return [str(int(b.lo) + b.open_lo), str(int(b.hi) - b.open_hi)]
    lo = b.lo + 1e-9 * max(1.0, b.hi - b.lo) if b.open_lo else b.lo
    hi = b.hi - 1e-9 * max(1.0, b.hi - b.lo) if b.open_hi else b.hi
    return [repr(lo), repr(hi)]


# The arguments each command needs before its numbers are read (files need not exist:
# the flags are refused first).
COMMAND_ARGS = {
    "compare": ["compare", "a.h5", "b.h5"], "stragglers": ["stragglers", "a.h5"],
    "suspects": ["suspects", "a.h5"], "report": ["report", "a.h5", "--html", "/nonexistent/x.html"],
    "baseline": ["baseline", "a.h5"], "validate": ["validate", "--hostfile", "/nonexistent/hosts"],
    "simulate": ["simulate", "trials", "--noise", "/nonexistent/m.json"],
    "simulate fleet": ["simulate", "fleet", "--noise", "/nonexistent/m.json"],
}


def flag_rows():
    """(table name, argv before the flag, flag, bound) of every command-line flag in the table."""
    for name, b in numbers.BOUNDS.items():
        words = name.split()
        if not words[-1].startswith("--") or name in ("simulate trials --hosts", "simulate fleet --hosts",
                                                     "compare --run-noise"):
            continue  # lists and words beside numbers: their own tests
        yield name, COMMAND_ARGS[" ".join(words[:-1])], words[-1], b
