"""Bad input for every flag of every subcommand, as a user would give it.

The flags are read, never listed by hand: `gdrbench <sub> --help` for the C++ subcommands (run,
list, doctor) and the analysis' own argparse tree (gdranalysis.cli.build_parser, subcommands of
subcommands too) for the rest, so a new flag is covered the day it is added. Each call gives one
flag one value of one class (below) on top of a valid base command line, and must:
  - exit 0 (1 or 4 where the command's own verdict says so) or 2 or 3, never killed by a signal,
    never 127; exit 2 with exactly one line on stderr (warnings before it aside); no Python traceback;
  - stay inside the memory limit (RLIMIT_AS) and the time limit (a hang is a finding);
  - leave every input file as it was (hashed before and after).
Findings are grouped by class. tests/fuzz/cli_known_findings.txt lists the findings still open
(each with its reason); any other fails the test. Seeded (the seed is printed; --seed N replays),
time-bounded (--seconds), and the coverage is printed: flags x value classes.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import fnmatch
import hashlib
import os
import random
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "results"))
CORPUS = os.path.join(HERE, "corpus", "hdf5_reader")
KNOWN = os.path.join(HERE, "cli_known_findings.txt")
MEM_LIMIT = 3 << 30          # bytes of address space per call
CALL_TIMEOUT = 30.0          # seconds per call
CPP_SUBS = ("run", "list", "doctor")

# The value classes: name -> a function of the fixture (paths) giving the argument text.
CLASSES = {
    "absurd": lambda fx, r: r.choice(["1e308", "99999999999999999999999", "4294967297", "1e9", "123456789012"]),
    "nan-inf": lambda fx, r: r.choice(["nan", "inf", "-inf", "NaN", "1e999"]),
    "negative": lambda fx, r: r.choice(["-1", "-0.5", "-9223372036854775809", "-1e9"]),
    "garbage-file": lambda fx, r: fx["garbage"],
    "empty-file": lambda fx, r: fx["empty"],
    "unreadable-file": lambda fx, r: fx["unreadable"],
    "directory": lambda fx, r: fx["dir"],
    "dev-null": lambda fx, r: fx["dev-null"],
    "dev-full": lambda fx, r: fx["dev-full"],
    "fifo": lambda fx, r: fx["fifo"],
    "link-to-input": lambda fx, r: fx["link"],
    "control-chars": lambda fx, r: r.choice(["a\nb", "x\x01\x7fy", "\t", "1\n2", "\x1b[31mred"]),
    "text": lambda fx, r: r.choice(["abc", "", " ", "8G8", "1,2,,3", "=", "--", "ü"]),
    "empty-name": lambda fx, r: "",
}


def gdrbench() -> str:
    for p in (os.environ.get("GDRBENCH"), os.path.join(REPO, "build", "gdrbench")):
        if p and os.access(p, os.X_OK):
            return os.path.abspath(p)  # the calls run in their own folders
    sys.exit("fuzz_cli: no gdrbench binary (set GDRBENCH)")


# ---- the flags ----------------------------------------------------------------------------

def cpp_flags(exe: str, sub: str) -> list:
    """(flag, takes_value) from CLI11's help: `  -t,--test TEXT=...` or `  --force`."""
    out = subprocess.run([exe, sub, "--help"], capture_output=True, text=True, timeout=30).stdout
    flags = []
    for line in out.splitlines():
        m = re.match(r"^\s{2}(?:-\w,)?(--[\w-]+)(?:\s+([A-Z][A-Z:]*)(?:=\S*)?)?(?:\s|$)", line)
        if m and m.group(1) != "--help":
            flags.append((m.group(1), bool(m.group(2))))
            if m.group(2) and m.group(1) in CPP_FILE_FLAGS:
                FILE_FLAGS.add((sub, m.group(1)))
    return flags


def python_flags() -> dict:
    """{'compare': [(flag or '<pos>N', takes_value)], 'simulate fit': [...], ...} from argparse."""
    from gdranalysis.cli import build_parser
    found = {}

    def walk(parser, prefix):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if prefix and not subs:
            flags, npos = [], 0
            for a in parser._actions:
                if isinstance(a, argparse._HelpAction):
                    continue
                if a.option_strings:
                    long = [o for o in a.option_strings if o.startswith("--")] or a.option_strings
                    flags.append((long[0], a.nargs != 0))
                else:
                    flags.append((f"<pos{npos}>", True))
                    npos += 1
                if a.nargs != 0 and FILE_NAMES.search(str(a.metavar or a.dest).upper()):
                    FILE_FLAGS.add((" ".join(prefix), flags[-1][0]))
            found[" ".join(prefix)] = flags
        for s in subs:
            for name, p in s.choices.items():
                walk(p, prefix + [name])
    walk(build_parser(), [])
    return found


# A flag that names a file (an input or an output) meets every odd kind of path in the first
# layer, whatever the seed: a FIFO that never gets a writer or a device that never ends is a hang
# or a memory finding on exactly those flags, too costly to leave to the draw.
FILE_CLASSES = ("fifo", "dev-full", "dev-null", "directory", "unreadable-file", "garbage-file",
                "empty-file", "link-to-input", "empty-name")
FILE_NAMES = re.compile(r"FILE|\.H5|\.JSON|\.HTML|\.PNG|\.PROM|PATH|ROWS|MODEL|FOLDER|DIR|^OUT|OUTPUT|HOSTFILE")
CPP_FILE_FLAGS = ("--output", "--json")  # CLI11 calls every value TEXT: these two take a path
FILE_FLAGS = set()  # (sub, flag), filled as the flags are read


# ---- the fixture: real inputs, and the odd paths of the classes ----------------------------

def fixture(tmp: str) -> dict:
    os.mkdir(tmp)
    fx = {"tmp": tmp}
    for name in ("run_p2p_np2.h5", "run_allreduce_np2.h5"):
        shutil.copy(os.path.join(CORPUS, name), os.path.join(tmp, name))
    fx["a"], fx["b"] = os.path.join(tmp, "run_p2p_np2.h5"), os.path.join(tmp, "run_allreduce_np2.h5")
    fx["hosts"] = os.path.join(tmp, "hostfile")
    with open(fx["hosts"], "w") as f:
        f.write("node1 slots=1\nnode2 slots=1\n")
    fx["garbage"] = os.path.join(tmp, "garbage.h5")
    with open(fx["garbage"], "wb") as f:
        f.write(random.Random(7).randbytes(4096))
    fx["empty"] = os.path.join(tmp, "empty.h5")
    open(fx["empty"], "w").close()
    fx["unreadable"] = os.path.join(tmp, "unreadable.h5")
    shutil.copy(fx["a"], fx["unreadable"])
    os.chmod(fx["unreadable"], 0)
    fx["dir"] = os.path.join(tmp, "a-directory")
    os.mkdir(fx["dir"])
    fx["fifo"] = os.path.join(tmp, "fifo")
    os.mkfifo(fx["fifo"])
    # Device nodes of the fixture's own (the same devices as /dev/null and /dev/full): a writer
    # that wrongly replaces a device then replaces this copy, never the machine's /dev/null.
    for name, minor in (("dev-null", 3), ("dev-full", 7)):
        fx[name] = os.path.join(tmp, name)
        try:
            os.mknod(fx[name], 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        except PermissionError:  # not root: the machine's node, which a non-root writer cannot replace
            fx[name] = "/dev/" + name[4:]
    fx["link"] = os.path.join(tmp, "link-to-a.h5")
    os.symlink(fx["a"], fx["link"])
    fx["out"] = os.path.join(tmp, "out")
    os.mkdir(fx["out"])
    return fx


def base_args(sub: str, fx: dict, out: str) -> list:
    """A command line the subcommand accepts (or refuses for want of MPI ranks: still one line)."""
    a, b = fx["a"], fx["b"]
    return {
        "run": ["-T", "mpi", "-t", "allreduce", "-m", "host", "-b", "8", "-e", "8", "-n", "2", "-w", "1",
                "--output", out + ".h5"],
        "list": [], "doctor": [],
        "compare": [a, a], "stragglers": [a], "suspects": [a], "report": [a, "--html", out + ".html"],
        "history": [a, fx["link"], "--case", "test=latency"], "baseline": [a, fx["link"]],
        "export": ["--openmetrics", a, "-o", out + ".prom"],
        "validate": ["--hostfile", fx["hosts"], "--gdrbench", "/bin/true", "--budget", "20", "--out", out],
        "simulate fit": [a, "-o", out + ".json"], "simulate trials": ["--trials", "2"],
        "simulate table": [out + ".rows"], "simulate fleet": ["--hosts", "8", "--trials", "2"],
    }.get(sub, [])


def with_value(args: list, flag: str, value) -> list:
    """The base with `flag` given `value` (replacing the base's own; a positional replaced)."""
    args = list(args)
    if flag.startswith("<pos"):
        i = int(flag[4:-1])
        pos = [j for j, x in enumerate(args) if not x.startswith("-") and (j == 0 or not args[j - 1].startswith("-")
                                                                              or args[j - 1] in ("--force",))]
        if i < len(pos):
            args[pos[i]] = value
        else:
            args.append(value)
        return args
    if flag in args:
        j = args.index(flag)
        del args[j:j + (2 if value is not None else 1)]
    return args + ([flag] if value is None else [flag, value])


# ---- one call --------------------------------------------------------------------------------

def digest(paths) -> dict:
    h = {}
    for p in paths:
        try:
            with open(p, "rb") as f:
                h[p] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            h[p] = None
    return h


def asan_binary() -> bool:
    """Whether gdrbench is built with AddressSanitizer, which reserves terabytes of address space
    for its shadow memory: no address-space limit can hold it (its own allocator reports instead)."""
    try:
        with open(gdrbench(), "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


ASAN = None


def limits():
    if not ASAN:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def judge(rc, err, timed_out, changed, empty_file_name=False) -> list:
    """The finding classes of one call (none: it behaved). An empty name for a file must be
    refused (exit 2): read as "not given" it silently writes or reads something else."""
    f = []
    if timed_out:
        return ["hang"]
    if empty_file_name and rc != 2:
        f.append("empty-name-accepted")
    if "Traceback (most recent call last)" in err:
        f.append("memory" if "MemoryError" in err else "traceback")
    if rc is not None and rc < 0:
        f.append(f"signal-{-rc}")
    elif rc not in (0, 1, 2, 3, 4):
        f.append(f"exit-{rc}")
    lines = [l for l in err.splitlines() if l.strip() and ": warning: " not in l]  # warnings may precede
    if rc == 2 and len(lines) != 1:
        f.append("not-one-line")
    if "bad_alloc" in err:
        f.append("memory")
    if changed:
        f.append("input-changed")
    return f


def call(exe, sub, flag, cls, seed, top, n):
    """One call in its own copy of the fixture (calls run side by side: a write is its own)."""
    fx = fixture(os.path.join(top, str(n)))
    inputs = [fx[k] for k in ("a", "b", "garbage", "empty", "hosts", "unreadable")]
    value = CLASSES[cls](fx, random.Random(f"{seed}/{sub}/{flag}/{cls}")) if cls != "present" else None
    out = os.path.join(fx["out"], "o")
    cmd = [exe, *sub.split(), *with_value(base_args(sub, fx, out), flag, value)]
    before = digest(inputs)
    t0 = time.monotonic()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", GDR_READ_TIMEOUT="10")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         preexec_fn=limits, env=env, start_new_session=True, cwd=fx["tmp"])
    try:
        _, e = p.communicate(timeout=CALL_TIMEOUT)
        rc, timed_out = p.returncode, False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)  # the call's own session: it and what it started
        _, e = p.communicate()
        rc, timed_out = None, True
    err = (e or b"").decode("utf-8", "replace")
    changed = [p for p, h in digest(inputs).items() if h != before[p]]
    os.chmod(fx["unreadable"], stat.S_IRUSR | stat.S_IWUSR)
    shutil.rmtree(fx["tmp"], ignore_errors=True)
    return {"sub": sub, "flag": flag, "cls": cls, "value": value, "rc": rc, "secs": time.monotonic() - t0,
            "findings": judge(rc, err, timed_out, changed, cls == "empty-name" and (sub, flag) in FILE_FLAGS), "err": err.strip().splitlines()[-1:] if err.strip() else [],
            "cmd": cmd, "changed": changed}


# ---- the plan, the known findings, the matrix ----------------------------------------------

def plan(flags: list, rng, rounds: int) -> tuple:
    """Calls in order of value: every flag once (a class each, rotating with the seed, so every
    class is used; a file flag every FILE_CLASSES too), then again with other classes; flags
    without a value once, as given.
    Returns the calls and how many the first layer holds (run whatever the time)."""
    names = list(CLASSES)
    cells, shift, first = [], rng.randrange(len(names)), 0
    for k in range(rounds):
        layer = [] if k else [(s, f, c) for s, f, _ in flags if (s, f) in FILE_FLAGS for c in FILE_CLASSES]
        for i, (sub, flag, takes) in enumerate(flags):
            if not takes:
                if k == 0:
                    layer.append((sub, flag, "present"))
                continue
            cls = names[(i * 5 + shift + k) % len(names)]
            if (sub, flag) not in FILE_FLAGS or cls not in FILE_CLASSES:
                layer.append((sub, flag, cls))
        rng.shuffle(layer)
        cells += layer
        first = first if k else len(layer)
    return cells, first


def known() -> list:
    """(pattern 'sub flag class finding', reason) of each open finding tolerated."""
    rows = []
    with open(KNOWN, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                pat, _, why = line.partition("#")
                if not why.strip():
                    sys.exit(f"fuzz_cli: {KNOWN}: '{line}' has no reason after '#'")
                rows.append((" ".join(pat.split()), why.strip()))
    return rows


def tolerated(r, finding, rows) -> bool:
    key = f"{r['sub'].replace(' ', '/')} {r['flag']} {r['cls']} {finding}"
    return any(fnmatch.fnmatchcase(key, pat) for pat, _ in rows)


def matrix(flags, results):
    names = list(CLASSES) + ["present"]
    cell = {}
    for r in results:
        k = (r["sub"], r["flag"], r["cls"])
        cell[k] = "X" if r["findings"] else ("o" if cell.get(k) != "X" else "X")
    print("coverage: o ok, X finding, . not drawn this seed; columns: " + " ".join(
        f"{i}={n}" for i, n in enumerate(names)))
    print(f"{'subcommand flag':40} " + "".join(f"{i % 10}" for i in range(len(names))))
    for sub, flag, _ in flags:
        print(f"{(sub + ' ' + flag)[:40]:40} " + "".join(cell.get((sub, flag, n), ".") for n in names))
    used = {(r["sub"], r["flag"]) for r in results}
    print(f"flags covered {len(used)}/{len(flags)}; classes used "
          f"{len({r['cls'] for r in results})}/{len(names)}; cells {len(cell)}; file flags {len(FILE_FLAGS)}, each with every odd path")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None, help="replay a run (default: from the clock, printed)")
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("GDR_FUZZ_CLI_SECONDS", 100)),
                    help="after the first layer (every flag once), stop starting calls after this "
                         "(default 100; GDR_FUZZ_CLI_SECONDS)")
    ap.add_argument("--rounds", type=int, default=3, help="classes per flag at most (default 3)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default=None, help="SUB/FLAG/CLASS glob (sub's spaces as /): replay those calls")
    a = ap.parse_args()
    global ASAN
    ASAN = asan_binary()
    seed = a.seed if a.seed is not None else int(time.time()) % 100000
    print(f"fuzz_cli: seed {seed} (replay: {sys.argv[0]} --seed {seed})", flush=True)
    rng = random.Random(seed)
    exe = gdrbench()
    flags = [(s, f, t) for s in CPP_SUBS for f, t in cpp_flags(exe, s)]
    flags += [(s, f, t) for s, fl in python_flags().items() for f, t in fl]
    cells, first = plan(flags, rng, a.rounds)
    if a.only:
        cells = [c for c in cells if fnmatch.fnmatchcase(f"{c[0].replace(' ', '/')}/{c[1]}/{c[2]}", a.only)]
        first = 0
    rows, results, t0 = known(), [], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gdr-fuzz-cli-") as tmp:
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            pending, it = set(), iter(enumerate(cells))
            while True:
                # The first layer (every flag once) runs whatever the time; the rest while it lasts.
                while len(pending) < a.jobs:
                    n, c = next(it, (None, None))
                    if c is None or (n >= first and time.monotonic() - t0 >= a.seconds):
                        break
                    pending.add(pool.submit(call, exe, c[0], c[1], c[2], seed, tmp, n))
                if not pending:
                    break
                done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                results += [d.result() for d in done]
    took = time.monotonic() - t0
    print(f"fuzz_cli: {len(results)} calls of {len(cells)} planned in {took:.1f} s "
          f"(mean {sum(r['secs'] for r in results) / max(1, len(results)):.2f} s a call, {a.jobs} at a time)")
    matrix(flags, results)
    groups = {}
    for r in results:
        for f in r["findings"]:
            groups.setdefault(f, []).append(r)
    new = 0
    print("findings by class:" if groups else "findings: none")
    for f, rs in sorted(groups.items()):
        print(f"  {f}: {len(rs)}")
        for r in rs:
            ok = tolerated(r, f, rows)
            new += not ok
            print(f"    {'known' if ok else 'NEW  '} {r['sub']} {r['flag']} {r['cls']} {r['value']!r}: exit {r['rc']}"
                  f"{' changed ' + ','.join(map(os.path.basename, r['changed'])) if r['changed'] else ''}"
                  f": {(r['err'] or [''])[0][:150]}")
    seen = {pat for r in results for f in r["findings"] for pat, _ in rows
            if fnmatch.fnmatchcase(f"{r['sub'].replace(' ', '/')} {r['flag']} {r['cls']} {f}", pat)}
    for pat, why in rows:
        if pat not in seen:
            print(f"  known entry not met this run (fixed, or not drawn): {pat}  # {why}")
    print(f"fuzz_cli: {new} new finding(s); seed {seed}")
    return 1 if new or not results else 0


if __name__ == "__main__":
    sys.exit(main())
