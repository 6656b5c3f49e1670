"""The JSON the analysis commands write (`--json`, validate's report):
indented, NumPy values as Python's, NaN and infinity as null (they are not
JSON). Below both the command line (cli.py) and validate, which write it."""

from __future__ import annotations

import json
import math
import sys

from .redaction import redact


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def _clean(o):
    """NaN/inf are not JSON: write null. Every string through the one redaction (redaction.py)."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, str):
        return redact(o)
    if isinstance(o, dict):
        return {redact(k) if isinstance(k, str) else k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def dump_json(obj, stream=None):
    json.dump(_clean(obj), stream or sys.stdout, indent=1, default=_json_default, allow_nan=False)
    (stream or sys.stdout).write("\n")
