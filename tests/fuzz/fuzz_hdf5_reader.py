"""atheris (libFuzzer for Python) target: the HDF5 result reader,
results/gdranalysis/schema.py load_run, over mutated real gdrbench files.

Property: every input gives either a loaded Run that the analysis can use
(describe, labels, keys, medians, stragglers) or gdranalysis' InputError,
whose message is one line (the CLI prints it and exits 2); never another
exception (a traceback) and never a hang (libFuzzer's -timeout).

Mutations: half of them libFuzzer's own byte-level ones, half structure-aware
ones through h5py on the file image (attributes deleted or retyped, `times`
reshaped or retyped, groups replaced by datasets, dangling and external
links, duplicated cases, ...), so that most inputs still open as HDF5 and
reach the schema checks instead of stopping at the superblock.

Run it through tests/fuzz/run_atheris.sh (ctest -L fuzz), or by hand:
  run_atheris.sh fuzz_hdf5_reader.py corpus/hdf5_reader /tmp/work [libFuzzer flags]
Reproduce one input:  python3 fuzz_hdf5_reader.py FILE
"""

import hashlib
import io
import os
import random
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports(include=["gdranalysis"]):
    from gdranalysis import schema, stragglers

import h5py
import numpy as np

warnings.simplefilter("ignore")  # numpy's "mean of empty slice" and the like are not failures

_TMPDIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
_fd, _PATH = tempfile.mkstemp(prefix="gdr-fuzz-", suffix=".h5", dir=_TMPDIR)
os.close(_fd)


def use(run):
    """What compare/report/history/stragglers do with a loaded run."""
    run.describe()
    _ = (run.status, run.start, run.nranks, run.schema_version, run.host_of(0), run.by_key())
    for c in run.cases:
        _ = (c.key, c.label(True), c.key_dict(), c.median_us(), c.busbw_median(), c.rank_medians())
    stragglers.analyze(run)


# load_run reads in a forked child (libhdf5 can hang or crash on corrupt
# files); the fuzzer's inputs are small, so a few seconds is plenty, and it
# must stay below libFuzzer's -timeout for a stuck libhdf5 to show up as the
# product's InputError rather than as a fuzzer timeout.
schema.READ_TIMEOUT_S = 3.0

# The forked reader inherits libFuzzer's crash handlers; a libhdf5 crash in
# it must end that child plainly (load_run turns it into an InputError),
# not be reported as the fuzzer's own crash.
_child = schema._load_in_child


def _plain_child(send, path):
    import signal
    for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE):
        signal.signal(s, signal.SIG_DFL)
    _child(send, path)


schema._load_in_child = _plain_child


def TestOneInput(data: bytes):
    with open(_PATH, "wb") as f:
        f.write(data)
    try:
        run = schema.load_run(_PATH)   # the product's path, isolated in a child
    except schema.HDF5LibraryError as e:
        _one_line(e)
        return                         # libhdf5 hung or died: do not repeat it in here
    except schema.InputError as e:
        _one_line(e)
        run = None
    _SAFE.add(hashlib.sha1(data).digest())
    # The same read again in this process: deterministic now that it is known
    # to end, and the coverage that guides the fuzzer is only seen in here.
    try:
        again = schema._load_here(_PATH)
    except schema.InputError:
        again = None
    if (run is None) != (again is None):
        raise AssertionError("load_run and the in-process read disagree")
    if run is not None:
        use(run)
        use(again)


def _one_line(e):
    msg = str(e)
    if not msg or "\n" in msg:
        raise AssertionError(f"InputError message is not one line: {msg!r}")


# ---- structure-aware mutation -------------------------------------------------

_VALUES = [
    0, -1, 1, 2, 2**31, 2**63 - 1, -(2**63), 1.5, float("nan"), float("inf"), float("-inf"),
    "", "x", "complete", "running", "failed", "allreduce", "latency", "mpi", "host", "cuda",
    b"\xff\xfe", "1\n2", np.bool_(True), np.array([1, 2, 3]), np.array([]), np.array(["a", "b"], dtype="S"),
    np.float16(1), np.uint64(2**64 - 1), np.array([[1.0]]), np.int8(-5),
]
_DATASETS = [
    np.zeros((0,)), np.zeros((0, 0)), np.zeros((2, 3, 4)), np.float64(1.0), np.array(["a", "b"], dtype="S"),
    np.array([[np.nan, np.inf], [-np.inf, 1e308]]), np.arange(6, dtype=np.int8).reshape(2, 3),
    np.array([1 + 2j]), np.full((1, 5), np.nan), np.array([1e-300]),
]


def _objects(f):
    out = []
    f.visit(lambda name: out.append(name))
    return out


def _mutate_h5(f, rnd):
    names = _objects(f)
    groups = [""] + [n for n in names if isinstance(f.get(n, getlink=False), h5py.Group)]
    targets = [f] + [f[n] for n in names]
    choice = rnd.randrange(9)
    obj = rnd.choice(targets)
    if choice == 0 and len(obj.attrs):            # delete an attribute
        del obj.attrs[rnd.choice(list(obj.attrs))]
    elif choice in (1, 2):                        # retype an attribute
        keys = list(obj.attrs) or ["schema_version"]
        obj.attrs[rnd.choice(keys)] = rnd.choice(_VALUES)
    elif choice == 3:                             # replace a dataset
        ds = [n for n in names if isinstance(f[n], h5py.Dataset)]
        if ds:
            n = rnd.choice(ds)
            del f[n]
            f[n] = rnd.choice(_DATASETS)
    elif choice == 4 and names:                   # a group or dataset becomes the other
        n = rnd.choice(names)
        del f[n]
        if rnd.random() < 0.5:
            f.create_group(n)
        else:
            f[n] = rnd.choice(_DATASETS)
    elif choice == 5 and names:                   # links: dangling soft, external, loops
        n = rnd.choice(names)
        del f[n]
        f[n] = rnd.choice([h5py.SoftLink("/nowhere"), h5py.SoftLink("/"), h5py.SoftLink(n),
                           h5py.ExternalLink("/nonexistent.h5", "/x"), h5py.ExternalLink("/etc/hostname", "/")])
    elif choice == 6:                             # duplicate a case
        cases = [n for n in names if n.startswith("cases/") and n.count("/") == 1]
        if cases:
            f.copy(f[rnd.choice(cases)], f"cases/{rnd.randrange(100000):05d}")
    elif choice == 7 and names:                   # delete anything
        del f[rnd.choice(names)]
    else:                                         # new attribute with an odd name
        g = f[rnd.choice(groups)] if groups else f
        g.attrs[rnd.choice(["ranks", "status", "start_utc", "schema_version", "bytes", "src", "units"])] = \
            rnd.choice(_VALUES)


# Inputs that libhdf5 opened without hanging or crashing (in the child):
# only those are opened in this process by the structure-aware mutator.
_SAFE = set()


def CustomMutator(data, max_size, seed):
    rnd = random.Random(seed)
    if rnd.random() < 0.5 or hashlib.sha1(data).digest() not in _SAFE:
        return atheris.Mutate(data, max_size)
    try:
        bio = io.BytesIO(data)
        with h5py.File(bio, "r+") as f:
            for _ in range(rnd.randrange(1, 4)):
                _mutate_h5(f, rnd)
        out = bio.getvalue()
    except Exception:  # not HDF5 (any more), or h5py refused the edit
        return atheris.Mutate(data, max_size)
    return out if len(out) <= max_size else atheris.Mutate(data, max_size)


def main():
    if len(sys.argv) == 2 and os.path.isfile(sys.argv[1]):   # reproduce one input
        with open(sys.argv[1], "rb") as f:
            TestOneInput(f.read())
        print("no failure")
        return
    atheris.Setup(sys.argv, TestOneInput, custom_mutator=CustomMutator)
    try:
        atheris.Fuzz()
    finally:
        os.unlink(_PATH)


if __name__ == "__main__":
    main()
