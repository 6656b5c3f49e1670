"""The settings page's claim, held: no option value is a global (docs/developers/settings.md).

Every mutable static of the product (src/, transports/, collectives/: a `static` or
`thread_local` variable that is not const) is listed below with why it is one, and no
static, const or not, is initialised from the environment or the settings. A new static
that holds an option (a round limit, a host map, a flag's value) fails here: pass it down
as a value instead. A listed static that is gone fails too, so the list cannot go stale.

Registrars (`static XRegistrar var{...}`, the registration of a transport, test, pattern,
memory kind or option table) are not listed: they run once before main and hold nothing.
"""
import os
import re
import unittest

from docs_model import REPO

ROOTS = ("src", "transports", "collectives")
EXTS = (".cpp", ".h", ".cu")

# "file: name" -> why it is process state, not an option passed around.
ALLOWED = {
    # Registration tables: filled by the registrars before main, read-only after.
    "src/core/component_options.cpp: r": "the registry of every component's options",
    "src/memory/memory.cpp: t": "the registry of memory kinds",
    "src/memory/memory.cpp: v": "the registry of memory kinds (their ids)",
    "src/doctor/report.cpp: rules": "the registry of the transports' readiness rules",
    "transports/transport.cpp: r": "the registry of transports",
    "transports/transport.cpp: f": "the staging layer's factory and pool size, set by its registrar",
    "collectives/patterns.cpp: r": "the registry of patterns",
    "collectives/registry.cpp: r": "the registries of tests and reference rows",
    # Scratch space: per thread, holds no value between calls.
    "src/verdicts/live_verdicts.cpp: dev": "a per-thread scratch buffer (no allocation a link)",
    "src/record/results.cpp: v": "a per-thread scratch buffer (no allocation a case)",
    # What the machine or a library is: probed once, the same for every run of the process.
    "src/core/mpi_cuda_aware.cpp: a": "the MPI library's CUDA awareness, probed once",
    "src/core/mpi_cuda_aware.cpp: probed": "whether it was probed",
    "transports/ucx/ucx_path.cpp: mu": "guards the cache below",
    "transports/ucx/ucx_path.cpp: cache": "what UCX's path report said per endpoint text",
    "src/core/ceiling.cpp: lock": "guards the memcpy rates below",
    "src/core/ceiling.cpp: measured": "the host memcpy rate per size class, measured once a process",
    "transports/verbs/cuda_driver.cpp: d": "the CUDA driver's entry points, looked up once",
    "collectives/nccl_api.cpp: a": "NCCL's entry points, looked up once (dlopen)",
    # Process state by nature, set from the resolved settings at the run's start.
    "src/memory/cuda/cuda_memory.cpp: c": "CUDA's current device is the process's: --device, applied once by "
                                          "the memory kind's apply hook from the resolved settings",
    # The CLI11 callback of generate-docs writes its argument here; the command reads it at once.
    "src/commands/generate_docs.cpp: what": "generate-docs' argument, parsed into by CLI11",
}

# "file: name" -> why this static may be initialised from the settings.
FROM_OPTIONS = {
    "src/core/timer.cpp: t": "GDR_TIMER: the process's one clock; the run's start is read on it before MPI "
                             "starts, so it is chosen at first use, through the timer's declaration "
                             "(resolve_settings), never a getenv of its own",
}

STATIC = re.compile(r"^\s*(?:static|thread_local)\s+(?:thread_local\s+)?(?P<decl>[^;{=(]*?)\b(?P<name>\w+)\s*(?P<init>[;{=(])")
FUNCTION = re.compile(r"^\s*(?:static|inline|thread_local|\s)+[\w:<>,\s\*&]+?\b\w+\s*\((?:\s*\)|[^)]*\w[\s\*&]+\w)")
READS_OPTIONS = re.compile(r"getenv\s*\(|resolve_settings\s*\(|\bSettings\b|RunOptions")


def product_files():
    for root in ROOTS:
        for d, _, files in os.walk(os.path.join(REPO, root)):
            for f in files:
                if f.endswith(EXTS):
                    yield os.path.join(d, f)


def initializer(lines, i):
    """The text of a static's declaration from line i to its end (a ';' at brace depth 0)."""
    depth, out = 0, []
    for line in lines[i:i + 60]:
        out.append(line)
        for ch in line:
            depth += ch in "{(["
            depth -= ch in "})]"
        if depth <= 0 and line.rstrip().endswith(";"):
            break
    return "\n".join(out)


def statics(path):
    """(name, const, its declaration text) of every static variable in the file."""
    lines = open(path, errors="replace").read().splitlines()
    for i, line in enumerate(lines):
        code = line.split("//")[0]
        m = STATIC.match(code)
        if not m or "static_cast" in code or "static_assert" in code or "Registrar" in code:
            continue
        if FUNCTION.match(code) or re.search(r"\boperator\b", code):
            continue
        decl = m.group("decl")
        const = bool(re.search(r"\b(const|constexpr)\b", decl))
        yield m.group("name"), const, initializer(lines, i)


def scan():
    mutable, from_options = set(), []
    for path in product_files():
        rel = os.path.relpath(path, REPO)
        for name, const, text in statics(path):
            if READS_OPTIONS.search(text):
                from_options.append(f"{rel}: {name}")
            if not const:
                mutable.add(f"{rel}: {name}")
    return mutable, from_options


class NoOptionIsAGlobal(unittest.TestCase):
    def test_every_mutable_static_is_listed(self):
        mutable, _ = scan()
        new = sorted(mutable - ALLOWED.keys())
        self.assertEqual(new, [], "mutable statics not in tests/docs/test_globals.py's list (pass the value down "
                                  "instead, or list it with why it is process state):\n" + "\n".join(new))
        gone = sorted(ALLOWED.keys() - mutable)
        self.assertEqual(gone, [], "listed statics that are gone (take them out of the list):\n" + "\n".join(gone))

    def test_no_static_is_initialised_from_the_options(self):
        _, from_options = scan()
        self.assertEqual(sorted(set(from_options) - FROM_OPTIONS.keys()), [],
                         "statics that read the environment or the settings:\n" + "\n".join(from_options))
        self.assertEqual(sorted(FROM_OPTIONS.keys() - set(from_options)), [], "listed, but gone")

    def test_the_scanner_sees_what_it_must(self):
        """The patterns find a round limit, a host map and a lambda reading the environment."""
        import tempfile
        src = ("namespace {\nint& round_limit() {\n  static int limit = 0;\n  return limit;\n}\n"
               "HostMap& the_map() {\n  static HostMap m;\n  return m;\n}\n"
               "const Timer& timer() {\n  static const Timer t = [] {\n    return pick(std::getenv(\"X\"));\n  }();\n"
               "  return t;\n}\nstatic int helper(int a);\nstatic Steps decode(const std::string& msg);\n"
               "static CudaDriver& get();\nstatic TestRegistrar reg{x};\n}\n")
        with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
            f.write(src)
        try:
            found = {(n, c, bool(READS_OPTIONS.search(t))) for n, c, t in statics(f.name)}
        finally:
            os.unlink(f.name)
        self.assertEqual(found, {("limit", False, False), ("m", False, False), ("t", True, True)})

    def test_the_settings_page_says_so(self):
        page = open(os.path.join(REPO, "docs/developers/settings.md")).read()
        self.assertIn("No option value is a global", page)
        self.assertIn("tests/docs/test_globals.py", page)


if __name__ == "__main__":
    unittest.main()
