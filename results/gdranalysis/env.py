"""The analysis commands' environment variables, read in one place: a bad
value is one line and exit 2 (an InputError), never a traceback, as the
binary's own variables (src/core/component_options.h)."""
import os
import shlex
import shutil

from .errors import InputError


def env_value(name: str, parse, want: str, default=None):
    """`name`'s value through `parse` (which raises ValueError on a bad one);
    `default` when unset or empty."""
    v = os.environ.get(name, "")
    if not v:
        return default
    try:
        return parse(v)
    except ValueError:
        raise InputError(f"environment {name}={v[:40]!r}: {want}") from None


def seconds(v: str) -> float:
    """More than 0 and at most a day; NaN and garbage are ValueErrors."""
    t = float(v)
    if not 0 < t <= 86400:  # NaN fails this too
        raise ValueError(v)
    return t


def executable(v: str) -> str:
    """A program found as a path or through PATH."""
    found = shutil.which(v)
    if not found:
        raise ValueError(v)
    return found


def words(v: str) -> list:
    """Arguments as a shell splits them (an unclosed quote is a ValueError)."""
    return shlex.split(v)
