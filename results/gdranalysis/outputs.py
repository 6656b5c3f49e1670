"""One way to open an output, for every analysis command that writes a file
(export -o, report --html, history --plot, simulate fit -o, simulate
trials/fleet --out, validate --out). docs/operators/outputs.md says it for users:

- a name holding a control character (newline, tab, escape) is refused;
- an existing path that is not a regular file (a folder, FIFO, device,
  socket) is refused, --force included;
- a path that is one of the command's own inputs, compared by device and
  inode (a symbolic or hard link to an input counts), is refused;
- an existing file is replaced only with --force (appending outputs add to it);
- a file is written whole or not at all: a temporary file beside the target,
  flushed to disk (fsync), then renamed over it. Through a symbolic link the
  file it points to is replaced, the link stays.

Each refusal is an InputError: one line, exit 2.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from .inputs import kind as _kind
from .schema import InputError

def _control(name: str):
    """The first control character in `name`, or None."""
    return next((c for c in name if ord(c) < 0x20 or ord(c) == 0x7f), None)


def _identity(path):
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def check(path: str, option: str, inputs=(), force=False, append=False, folder=False) -> None:
    """Refuses `path` (given as `option`) in one line, or returns: see the
    module's rules. `folder`: the path is an output folder (validate --out)."""
    c = _control(path)
    if c is not None:
        raise InputError(f"{option} {path!r}: the name holds a control character ({ord(c):#04x}); "
                         "choose a name without one")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise InputError(f"{option} {path}: cannot use it ({e.strerror or e})") from e
    if st is not None:
        kind = _kind(st)
        if folder and kind != "a folder":
            raise InputError(f"{option} {path}: is {kind or 'a file'}, not a folder")
        if not folder and kind:
            raise InputError(f"{option} {path}: is {kind}, not a regular file; give a file name")
    me = None if st is None else (st.st_dev, st.st_ino)
    for i in inputs:
        if me is not None and i and _identity(i) == me:
            raise InputError(f"{option} {path}: is this command's own input {i} (the same file); "
                             "give another name")
    if st is not None and not (force or append or folder):
        raise InputError(f"{option} {path}: file exists; pass --force to replace it")


@contextlib.contextmanager
def atomic(path: str, option: str, mode="w"):
    """A file object whose contents replace `path` whole when the block ends
    without an error (temporary file beside it, fsync, rename); on an error
    the temporary file goes and `path` is untouched. OSError: one line."""
    target = os.path.realpath(path)  # through a link: its file is replaced, the link stays
    d = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=d)
    except OSError as e:
        raise InputError(f"{option} {path}: cannot write in {d} ({e.strerror or e})") from e
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise InputError(f"{option} {path}: cannot write it ({e.strerror or e})") from e
        raise


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def write(path: str, data, option: str, inputs=(), force=False) -> None:
    """check() then atomic(): `data` is str or bytes."""
    check(path, option, inputs, force)
    with atomic(path, option, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def open_append(path: str, option: str, inputs=()):
    """An appending output (simulate --out): checked, then opened to add lines."""
    check(path, option, inputs, append=True)
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as e:
        raise InputError(f"{option} {path}: cannot write it ({e.strerror or e})") from e


def prepare_folder(path: str, option: str, force=False, names=()) -> None:
    """An output folder (validate --out): refused when its name holds a control
    character or it exists as anything but a folder; when it already holds one
    of `names` (an earlier result), only with --force. Then created."""
    check(path, option, folder=True)
    held = [n for n in names if os.path.lexists(os.path.join(path, n))]
    if held and not force:
        raise InputError(f"{option} {path}: already holds {', '.join(held)} of an earlier run; "
                         "pass --force to replace them, or give a new folder")
    for n in held:
        check(os.path.join(path, n), f"{option} (its {n})", force=True)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InputError(f"{option} {path}: cannot create it ({e.strerror or e})") from e
