"""An HDF5 attribute's value as plain Python: bytes as text, a 0-d array or a
NumPy scalar as its Python value. Shared by the file reader (schema.py) and
the reader of pattern flows and link matrices (schema_patterns.py)."""

from __future__ import annotations

import numpy as np


def as_text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.shape == ():
        return as_text(v[()])
    return v


def as_scalar(v):
    v = as_text(v)
    if isinstance(v, np.generic):
        return v.item()
    return v
