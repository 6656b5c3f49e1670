"""The one redaction of every string the analysis stores or prints (JSON, the
HTML report, validate's commands.log and validate.json, error lines): the
same table as the C++ side (redaction_shapes.tsv beside this file, compiled
into gdrbench), read here, applied the same way: line by line, row by row in
the table's order, each match's secret replaced by REDACTED.

A line longer than MAX_LINE bytes is not looked at: it is replaced whole, as a
secret would be (the C++ regex engine recurses per character)."""

from __future__ import annotations

import functools
import math
import os
import re

MARK = "REDACTED"
MAX_LINE = 4096
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redaction_shapes.tsv")


def read_table(path: str = TABLE) -> list:
    """The rows: dicts of name, kind, flags, pattern, what (the header line names the columns)."""
    rows, header = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cells = line.split("\t")
            if header is None:
                header = cells
                continue
            rows.append(dict(zip(header, cells)))
    return rows


_ROWS = read_table()
_KEYS = [(r["kind"], r["pattern"]) for r in _ROWS if r["kind"].startswith("key-")]
_RULES = [(r["kind"], re.compile(r["pattern"], re.ASCII | (re.I if "i" in r["flags"] else 0)))
          for r in _ROWS if not r["kind"].startswith("key-")]
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _words(name: str) -> list:
    return [w for w in re.split(r"[-_.]", name) if w]


def looks_secret(name: str) -> bool:
    """A name (environment variable, key of key=value, flag) that names a credential."""
    u = name.upper()
    words = _words(u)
    for kind, word in _KEYS:
        if kind == "key-part" and word in u:
            return True
        if kind == "key-start" and any(w.startswith(word) for w in words):
            return True
        if kind == "key-word" and word in words:
            return True
        if kind == "key-end" and any(w.endswith(word) for w in words):
            return True
    return False


def _mixed(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)


def _bits(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(x) for x in set(s)))


def _is_secret(kind: str, m) -> bool:
    if kind == "param":
        return looks_secret(m.group(2))
    if kind == "shape":
        return True
    cand = m.group(2)
    if kind == "hex":
        return sum(c != "-" for c in cand) >= 32 and not _UUID.fullmatch(cand)
    if kind == "mixed":  # a path's run: one of its /-parts of 12 or more mixes upper and lower case
        parts = cand.split("/")
        return _mixed(cand) and (len(parts) == 1 or any(
            len(x) >= 12 and any(c.isupper() for c in x) and any(c.islower() for c in x) for x in parts))
    if kind == "entropy":
        return _mixed(cand) and _bits(cand.rstrip("=")) >= 3.0
    raise ValueError(f"redaction_shapes.tsv: unknown kind {kind!r}")


def _apply(kind: str, rx, line: str) -> str:
    """Leftmost matches from `pos` on; a param whose key is not a credential is
    passed over up to its value only (the value may hold the next key=value)."""
    out, at, pos = [], 0, 0
    while pos <= len(line):
        m = rx.search(line, pos)
        if not m:
            break
        if not _is_secret(kind, m):
            pos = max(m.end(3) if kind == "param" else m.end(), m.start() + 1)
            continue
        pos = max(m.end(), m.start() + 1)
        if kind == "param":
            keep, after = m.group(1) + m.group(2) + m.group(3), ""
        else:
            keep, after = m.group(1) or "", (m.group(3) or "") if rx.groups >= 3 else ""
        out.append(line[at:m.start()] + keep + MARK + after)
        at = m.end()
    return "".join(out) + line[at:] if out else line


@functools.lru_cache(maxsize=65536)
def redact_line(line: str) -> str:
    n = len(line.encode("utf-8", "surrogateescape"))
    if n > MAX_LINE:
        return f"{MARK} (a line of {n} bytes, over {MAX_LINE}: not stored)"
    for kind, rx in _RULES:
        line = _apply(kind, rx, line)
    return line


def redact(text: str) -> str:
    """`text` with every secret the table knows replaced by REDACTED."""
    if not isinstance(text, str) or not text:
        return text
    return "\n".join(redact_line(x) for x in text.split("\n"))


def redact_obj(obj):
    """Every string (keys too) inside a JSON-like structure, redacted."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


class RedactingStream:
    """A text stream (stdout) that writes every whole line through redact(); the rest of a line
    waits for its end, flush() or close (what the analysis prints: tables, metrics)."""

    def __init__(self, stream):
        self._s, self._part = stream, ""

    def write(self, text: str) -> int:
        text = self._part + text
        head, nl, self._part = text.rpartition("\n")
        if nl:
            self._s.write(redact(head) + "\n")
        return len(text)

    def flush(self):
        if self._part:
            self._s.write(redact(self._part))
            self._part = ""
        self._s.flush()

    def __getattr__(self, name):  # fileno, isatty, encoding, buffer...
        return getattr(self._s, name)
