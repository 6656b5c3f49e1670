"""A transport from a folder under tests/ (one CMake line registers it) gets
its flag and the flag's environment twin, with one bound for both, into the
help, the man page's environment table and its own typed settings; the stock
binary knows nothing of it.

It also counts, from the tree, the files outside this folder that name the
transport (docs and their checks aside): the cost of adding one, for docs/developers.

  test_example_transport.py GDRBENCH_EXAMPLE GDRBENCH SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

import h5py

EXAMPLE, STOCK, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("example_transport", "ExampleSettings", "GDR_EXAMPLE_LANES", "example-lanes")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1")
ARGS = ["run", "-T", "example", "-t", "latency,bw", "-b", "8", "-e", "64K", "-f", "8192", "-n", "3", "-w", "1",
        "--window", "4", "--reference", "none"]


def sh(cmd, env=None, timeout=60):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(ENV, **(env or {})))


def check(cond, msg):
    if not cond:
        print(f"FAIL: {msg}", file=sys.stderr)
        sys.exit(1)


def lanes_stored(flags, env, tmp, name):
    out = os.path.join(tmp, name + ".h5")
    r = sh(["mpirun", "-q", "--oversubscribe", "-np", "2", EXAMPLE] + ARGS + flags + ["--output", out], env, 120)
    check(r.returncode == 0, f"{flags} {env}: exit {r.returncode}: {r.stderr}")
    with h5py.File(out, "r") as f:
        check(all(int(g.attrs["wrong"]) == 0 for g in f["cases"].values()), f"{name}: wrong bytes")
        return f["facts"].attrs["example.lanes"].decode() if isinstance(f["facts"].attrs["example.lanes"], bytes) \
            else str(f["facts"].attrs["example.lanes"])


def one_line_exit_2(r, needle, what):
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    check(r.returncode == 2 and len(lines) == 1 and needle in lines[0], f"{what}: exit {r.returncode}, {lines}")
    return lines[0]


def files_outside():
    """Source files outside this folder that name the transport (docs/, the docs checks in
    tests/docs/, which list the flags the docs name, and build trees aside)."""
    found = []
    for top, dirs, files in os.walk(SOURCE):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and os.path.join(top, d) != HERE
                   and os.path.relpath(os.path.join(top, d), SOURCE) not in ("docs", "tests/docs", "results/archive")]
        for f in files:
            path = os.path.join(top, f)
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except (UnicodeDecodeError, OSError):
                continue
            if any(n in text for n in NAMES):
                found.append(os.path.relpath(path, SOURCE))
    return sorted(found)


def main():
    outside = files_outside()
    print(f"files outside its folder: {len(outside)} ({', '.join(outside)})")
    check(outside == ["tests/contract/CMakeLists.txt"], f"adding the transport touched {outside}")
    check("--example-lanes" in sh([EXAMPLE, "run", "--help"]).stdout, "the flag is not in --help")
    check("GDR_EXAMPLE_LANES" in sh([EXAMPLE, "generate-docs", "man"]).stdout, "the twin is not in the man page")
    check("--example-lanes" not in sh([STOCK, "run", "--help"]).stdout, "the stock binary has the test's flag")
    check("GDR_EXAMPLE_LANES" not in sh([STOCK, "generate-docs", "man"]).stdout, "the stock man page has it")
    # One parser, one bound (1 to 8) for the flag and its twin.
    flag = one_line_exit_2(sh([EXAMPLE] + ARGS + ["--example-lanes", "9"]), "--example-lanes '9'", "flag 9")
    twin = one_line_exit_2(sh([EXAMPLE] + ARGS, {"GDR_EXAMPLE_LANES": "9"}), "GDR_EXAMPLE_LANES='9'", "twin 9")
    check("from 1 to 8" in flag and "from 1 to 8" in twin, f"bounds differ: {flag!r} / {twin!r}")
    with tempfile.TemporaryDirectory(prefix="gdrtest-") as tmp:
        check(lanes_stored(["--example-lanes", "3"], None, tmp, "flag") == "3", "flag 3 did not reach the transport")
        check(lanes_stored([], {"GDR_EXAMPLE_LANES": "4"}, tmp, "twin") == "4", "the twin did not reach it")
        check(lanes_stored(["--example-lanes", "2"], {"GDR_EXAMPLE_LANES": "4"}, tmp, "both") == "2",
              "the flag did not win over its twin")
    print("PASS")


main()
