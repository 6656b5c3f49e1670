"""gdranalysis: reads gdrbench result files (HDF5, results/README.md) and
answers the questions asked of an archive of runs: what got slower
(compare), which rank or host was slow (stragglers), what does a run look
like (report) and how did one case move over time (history).

`gdrbench compare|stragglers|report|history ...` runs
`python3 -m gdranalysis <subcommand> ...` with this folder's parent on
PYTHONPATH; the package can also be used directly from Python.
"""

__version__ = "1.0.0"

# Newest result-file schema this package understands (results/README.md);
# it reads every older one too.
SCHEMA_VERSION = 2
