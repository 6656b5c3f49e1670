"""One way to read a file a user names as an input (validate --hostfile,
simulate table ROWS, simulate --noise MODEL.json, every RUN.h5), the twin of
outputs.py. docs/operators/outputs.md says it for users:

- only a regular file is read: a folder, FIFO, socket or device is refused
  before it is opened for reading (a FIFO would wait for a writer forever,
  /dev/zero or /dev/full would never end);
- a text input is read up to its command's cap and refused beyond it, so a
  huge or growing file cannot take the machine's memory.

Each refusal is an InputError: one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import stat

from .errors import InputError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def file_name(text: str) -> str:
    """argparse's type of every argument that names a file: an empty name is refused (one line,
    exit 2), never read as "not given"."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name; give a file name")
    return text


def kind(st) -> str:
    """What a stat result is when it is not a regular file ("a FIFO", ...); "" for a regular file.
    outputs.py names its refusals with it too."""
    for test, what in _KINDS:
        if test(st.st_mode):
            return what
    return "" if stat.S_ISREG(st.st_mode) else "not a regular file"


def regular(path: str, what: str) -> None:
    """Refuses, in one line, a `path` (named `what` in the message) that is not a regular file."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:
        raise InputError(f"{what}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    k = kind(st)
    if k == "not a regular file":
        raise InputError(f"{what}: not a regular file")
    if k:
        raise InputError(f"{what}: is {k}, not a regular file")


def read_text(path: str, what: str, max_bytes: int) -> str:
    """The UTF-8 text of the regular file `path`, at most `max_bytes` long; InputError otherwise."""
    regular(path, what)
    try:
        # O_NONBLOCK: should the path become a FIFO between the check and the open, it cannot wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise InputError(f"{what}: not a regular file")
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"{what}: cannot read it ({e.strerror or e})") from None
    if len(data) > max_bytes:
        raise InputError(f"{what}: larger than {max_bytes} bytes; not an input this command reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what}: not UTF-8 text") from None
