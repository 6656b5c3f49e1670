"""gdranalysis: reads gdrbench result files (HDF5, results/README.md) and
answers the questions asked of an archive of runs: what got slower
(compare), which rank or host was slow (stragglers), what does a run look
like (report) and how did one case move over time (history).

`gdrbench compare|stragglers|report|history ...` runs
`python3 -m gdranalysis <subcommand> ...` with this folder's parent on
PYTHONPATH; the package is also a Python API (api.py, docs/python-api.md):
`from gdranalysis import load_run`, installable with pip (pyproject.toml).
"""

# gdrbench's version (CMakeLists.txt project(); CMake refuses to configure
# when the two differ), also the pip package's (pyproject.toml reads it).
__version__ = "0.1.0"

# Newest result-file schema this package understands (results/README.md);
# it reads every older one too.
SCHEMA_VERSION = 2


def __getattr__(name):
    # Lazy, so that `python3 -m gdranalysis` still reports a missing numpy,
    # pandas or h5py as one line (its __main__) rather than at package import.
    if name in ("load_run", "RunResult"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'gdranalysis' has no attribute {name!r}")
