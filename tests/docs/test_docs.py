"""The docs' claims hold (label `docs`; what and why: docs/developers/testing.md#docs-checks).

Environment: GDRBENCH (the binary), GDR_BUILD_DIR (the build folder, for ctest's
own list of tests and labels). No mpirun: seconds."""
import argparse
import functools
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tarfile
import unittest

from docs_model import (CODE, DOCS, LINK, REPO, anchors, blocks, code_comments, comment_paths, comments_of_text,
                        commented_sources, prose, read, repo_path_candidates, resolve_archive, shell_commands,
                        tracked_markdown)

GDRBENCH = os.environ.get("GDRBENCH", os.path.join(REPO, "build", "gdrbench"))
BUILD = os.environ.get("GDR_BUILD_DIR", os.path.join(REPO, "build"))
NEEDS = {"gpu", "hca", "cluster", "root", "network", "asan"}
SHELL = {"sh", "bash", "shell", "console"}
# Blocks of numbers with no archived run, and shell blocks no test runs, each said so in its
# page with why. Pinned: a new one fails.
UNARCHIVED = {"docs/analysts/output.md": 1, "docs/measurements/README.md": 1}
UNTESTED = {"docs/fleet-scale.md": 1}
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


@functools.lru_cache(None)
def ctest_tests():
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=BUILD, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=True).stdout
    return {t["name"]: t for t in json.loads(out)["tests"]}


@functools.lru_cache(None)
def labels():
    """Labels of this build's tests, and those only other presets' builds define (sanitize)."""
    found = set()
    for t in ctest_tests().values():
        for p in t.get("properties", []):
            if p["name"] == "LABELS":
                found.update(p["value"])
    for cm in glob.glob(os.path.join(REPO, "tests", "**", "CMakeLists.txt"), recursive=True):
        for m in re.finditer(r'LABELS\s+("([^"]*)"|([\w;]+))', read(os.path.relpath(cm, REPO))):
            found.update(x for x in (m.group(2) or m.group(3)).split(";") if x and not x.startswith("$"))
    return found


@functools.lru_cache(None)
def analysis_flags():
    """{'compare': flags, 'simulate fit': flags, ...} of the analysis subcommands, read from the
    argparse parser that `gdrbench SUB --help` prints (one import, not a Python per subcommand)."""
    sys.path.insert(0, os.path.join(REPO, "results"))
    from gdranalysis.cli import build_parser  # noqa: E402
    out = {}

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{prefix} {name}".strip())
        if prefix:
            out[prefix] = {s for a in parser._actions for s in a.option_strings}
    walk(build_parser(), "")
    return out


@functools.lru_cache(None)
def help_flags(sub):
    """The flags `gdrbench SUB --help` lists (SUB '' for the top level)."""
    if sub in analysis_flags():
        return analysis_flags()[sub]
    args = [GDRBENCH] + sub.split() + ["--help"]
    p = subprocess.run(args, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: exit {p.returncode}\n{p.stdout}")
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", p.stdout))


@functools.lru_cache(None)
def subcommands():
    out = subprocess.run([GDRBENCH, "--help"], text=True, stdout=subprocess.PIPE, timeout=60).stdout
    return set(re.findall(r"^  ([a-z-]+)\s{2,}", out, re.M))


def gdrbench_calls(text):
    """(subcommand, flags) of every `gdrbench SUB ...` in a command or code span; SUB may have a
    word of its own (`simulate fit`), whose --help then lists the flags."""
    for m in re.finditer(r"(?:^|[\s/])gdrbench\s+([a-z-]+)((?:[ \t]+[^\s|;&>#)]+)*)", text):
        sub, rest = m.group(1), m.group(2).split()
        if rest and re.match(r"^[a-z]+$", rest[0]) and sub == "simulate":
            sub, rest = f"{sub} {rest[0]}", rest[1:]
        flags = [t.split("=")[0] for t in rest if re.match(r"^--?[A-Za-z]", t)]
        yield sub, flags


def source_text():
    """Every tracked file that is not documentation, archive or corpus, as one string."""
    out = subprocess.run(["git", "ls-files"], cwd=REPO, text=True, stdout=subprocess.PIPE, check=True).stdout
    parts = []
    for p in out.split():
        if p.endswith(".md") or p.startswith(("results/archive/", "tests/fuzz/corpus/", "tests/doctor/data/")):
            continue
        try:
            parts.append(read(p))
        except (UnicodeDecodeError, IsADirectoryError):
            pass
    return "\n".join(parts)


class Paths(unittest.TestCase):
    def test_links(self):
        """Every relative link of every Markdown file resolves, its anchor to a heading."""
        bad = []
        for doc in tracked_markdown():
            for m in LINK.finditer(prose(doc)):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(REPO, os.path.dirname(doc), path)) if path else \
                    os.path.join(REPO, doc)
                if not os.path.exists(full):
                    bad.append(f"{doc}: {target}: no such file")
                elif anchor and full.endswith(".md") and anchor not in anchors(os.path.relpath(full, REPO)):
                    bad.append(f"{doc}: {target}: no heading '{anchor}'")
        self.assertEqual(bad, [], "\n".join(bad))

    def test_paths(self):
        """Every path of the tree named in the docs exists (globs match something)."""
        bad = []
        for doc in DOCS:
            texts = [s for s in CODE.findall(prose(doc))]
            # In commands, what follows -o, --out... or > is written by the command, not read.
            texts += [re.sub(r"(\s-o|--out\w*|>)\s+\S+", " ", b.text()) for b in blocks(doc)
                      if b.kind == "fence" and b.lang in SHELL]
            for t in texts:
                for p in repo_path_candidates(t):
                    if not glob.glob(os.path.join(REPO, resolve_archive(p))):
                        bad.append(f"{doc}: {p}")
        self.assertEqual(sorted(set(bad)), [], "\n".join(sorted(set(bad))))

    def test_env_names(self):
        """Every GDR_* variable the docs name is read somewhere in the source."""
        src = source_text()
        names = {n for doc in DOCS for n in re.findall(r"\bGDR_[A-Z0-9_]*[A-Z0-9]\b", read(doc))}
        missing = sorted(n for n in names if not re.search(r"\b" + n + r"\b", src))
        self.assertEqual(missing, [])


# Comments that name a file that is not there, pinned while they wait for a fix: a new one fails,
# and so does one fixed (take it out here). None today.
STALE_COMMENT_PATHS: set[str] = set()


class CommentPaths(unittest.TestCase):
    def test_paths_in_code_comments(self):
        """Every repository path a code comment names (C++ //, Python, shell and CMake #) under
        src/, transports/, collectives/, jobs/, results/ and tests/ exists (an archived file
        by its old name too)."""
        bad, checked = set(), 0
        for rel in commented_sources():
            for line, p in comment_paths(code_comments(rel)):
                checked += 1
                if not glob.glob(os.path.join(REPO, resolve_archive(p))):
                    bad.add(f"{rel}: {p}")
        self.assertGreater(checked, 100)
        self.assertEqual(sorted(bad), sorted(STALE_COMMENT_PATHS), "\n".join(sorted(bad - STALE_COMMENT_PATHS)))

    def test_comment_reader(self):
        """The reader finds paths in comments only: not in strings, URLs or words like src/dst."""
        cpp = '\n'.join(['auto u = "http://x/src/a.h"; // see src/core/nope.h, and src/dst',
                         'f("// src/in_string.h");',
                         '/* block: jobs/gpu/nope.sh', '   tests/nope/x.py */ int y;'])
        self.assertEqual([p for _, p in comment_paths(comments_of_text(cpp, True))],
                         ["src/core/nope.h", "jobs/gpu/nope.sh", "tests/nope/x.py"])
        sh = '\n'.join(["#!/bin/bash", 'echo "#results/in_string.txt" # writes results/archive/x.txt',
                        "x=${y#src/}  # cmake/fmt is a word, cmake/Gdr.cmake a file"])
        self.assertEqual([p for _, p in comment_paths(comments_of_text(sh, False))],
                         ["results/archive/x.txt", "cmake/Gdr.cmake"])


def man_page():
    """The man page the build generated (gdrbench generate-docs man)."""
    path = os.path.join(BUILD, "share", "man", "man1", "gdrbench.1")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return f.read()
    return subprocess.run([GDRBENCH, "generate-docs", "man"], text=True, stdout=subprocess.PIPE, check=True,
                          timeout=120).stdout


class Environment(unittest.TestCase):
    def test_every_variable_is_documented(self):
        """docs/operators/environment.md names every variable of the man page's ENVIRONMENT section."""
        man = man_page()
        section = man[man.index(".SH ENVIRONMENT"):]
        section = section[:section.index(".SH", 4)]
        declared = set(re.findall(r"GDR_[A-Z0-9_]*[A-Z0-9]", section))  # troff writes \fBGDR_TIMER\fR
        self.assertTrue(declared)
        page = read("docs/operators/environment.md")
        self.assertEqual(sorted(n for n in declared if n not in page), [])


class NumberBounds(unittest.TestCase):
    def test_the_table_is_the_code(self):
        """docs/operators/numbers.md's table is, row for row, the binary's (gdrbench generate-docs
        numbers) and then the analysis' (gdranalysis.numbers.markdown_rows): every bound documented."""
        binary = subprocess.run([GDRBENCH, "generate-docs", "numbers"], text=True, stdout=subprocess.PIPE, check=True,
                                timeout=60).stdout.splitlines()
        sys.path.insert(0, os.path.join(REPO, "results"))
        from gdranalysis import numbers  # noqa: E402
        page = [line for line in read("docs/operators/numbers.md").splitlines() if line.startswith("| `")]
        self.assertGreater(len(binary), 20)
        self.assertEqual(page, binary + numbers.markdown_rows())


class Readme(unittest.TestCase):
    def test_pypi_pins(self):
        """The README names every PyPI package the repository pins, with its version."""
        out = subprocess.run(["git", "ls-files", "*requirements*.txt", "jobs/*.sh"], cwd=REPO, text=True,
                             stdout=subprocess.PIPE, check=True).stdout
        pins = {m for f in out.split() for m in re.findall(r"\b([A-Za-z][\w.-]*==\d[\w.]*)", read(f))}
        self.assertTrue(pins)
        readme = read("README.md")
        self.assertEqual(sorted(p for p in pins if p not in readme), [])


class Layout(unittest.TestCase):
    def test_layout_names_every_folder(self):
        """The developers' Layout table names every top folder, and every folder under tests/."""
        table = [b for b in blocks("docs/developers/README.md") if b.kind == "table" and "| folder |" in b.lines[0]]
        self.assertEqual(len(table), 1)
        rows = {re.findall(r"`([\w/.-]+)`", line.split("|")[1])[0]: line for line in table[0].lines[2:]}
        out = subprocess.run(["git", "ls-files"], cwd=REPO, text=True, stdout=subprocess.PIPE, check=True).stdout
        top = {p.split("/")[0] + "/" for p in out.split() if "/" in p and not p.startswith(".")}
        self.assertEqual(sorted(top - set(rows)), [])
        under = {p.split("/")[1] + "/" for p in out.split() if p.startswith("tests/") and p.count("/") >= 2}
        named = set(re.findall(r"`([\w-]+/)`", rows["tests/"]))
        self.assertEqual(sorted(under - named), [])


class Labels(unittest.TestCase):
    def test_labels_table(self):
        """The labels table of docs/developers/testing.md lists exactly the labels the tests carry."""
        table = [b for b in blocks("docs/developers/testing.md") if b.kind == "table" and "| label |" in b.lines[0]]
        self.assertEqual(len(table), 1)
        documented = {m for line in table[0].lines[2:] for m in re.findall(r"^\|\s*`([\w-]+)`", line)}
        self.assertEqual(documented, labels())

    def test_labels_named(self):
        """Every `label X`, `-L X` in the docs and in tests/run_all.sh names a real label."""
        bad = []
        for doc in DOCS + ["tests/run_all.sh"]:
            text = read(doc)
            named = []
            for m in re.finditer(r"\blabels? ((?:`[\w-]+`(?:,? and |, | or |\|)?)+)", text):
                named += re.findall(r"`([\w-]+)`", m.group(1))
            for m in re.finditer(r"-L\s+'?\"?([\w|]+)", text):
                named += m.group(1).split("|")
            flat = " ".join(re.sub(r"^\s*#\s?", "", x) for x in text.split("\n"))  # comments of a script, joined
            for m in re.finditer(r"\blabels?:?\s+((?:[a-z-]+,\s+)+(?:and\s+)?[a-z-]+)", flat):
                items = re.findall(r"[a-z-]+", m.group(1).replace(" and ", " "))
                if set(items) & labels():  # a list of labels, not "the label: paths, flags, ..."
                    named += items
            bad += [f"{doc}: {n}" for n in named if n not in labels()]
        self.assertEqual(bad, [])
        self.assertIn("ucx", labels())


class Flags(unittest.TestCase):
    def test_options_table_is_run_help(self):
        """docs/operators/options.md's table names exactly `gdrbench run --help`'s flags."""
        table = [b for b in blocks("docs/operators/options.md") if b.kind == "table" and "| option |" in b.lines[0]]
        self.assertEqual(len(table), 1)
        documented = set()
        for line in table[0].lines[2:]:
            documented.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line.split("|")[1]))
        self.assertEqual(documented, help_flags("run") - {"-h", "--help"})

    def test_command_flags(self):
        """Every `gdrbench SUB` in the docs is a subcommand, and its flags are in its --help."""
        bad = []
        for doc in DOCS:
            texts = CODE.findall(prose(doc)) + [b.text() for b in blocks(doc) if b.kind == "fence" and b.lang in SHELL]
            for t in texts:
                for sub, flags in gdrbench_calls(t):
                    if sub.split()[0] not in subcommands():
                        continue  # prose such as "gdrbench finds"; a command block's word is checked below
                    bad += [f"{doc}: gdrbench {sub} {f}" for f in flags if f not in help_flags(sub)]
        self.assertEqual(sorted(set(bad)), [])


# Flags of other programs that the docs name in code spans, with their owner. A flag in a code
# span is gdrbench's (any subcommand's --help) or one of these; a new one is added here knowingly.
FOREIGN_FLAGS = {
    "--enable-recovery": "mpirun", "--mca": "mpirun", "--oversubscribe": "mpirun",
    "--exclusive": "sbatch", "--wrap": "sbatch", "--mpi": "srun", "--no-deps": "pip", "--system-site-packages": "venv", "--variant": "debootstrap",
    "--output-on-failure": "ctest", "--print-labels": "ctest", "--show-only": "ctest", "--nodes": "jobs/bench_verbs_vs_perftest.sh",
    "--status": "jobs/with_mps.sh", "--summarize": "jobs/cluster/measure_validate.py",
    "--gen": "jobs/cluster/measure_validate.py", "--run-s": "jobs/cluster/measure_validate.py",
    "--rerun": "jobs/cluster/measure_validate.py",
    "--system": "jobs/reframe/make_references.py", "--tolerance": "jobs/reframe/make_references.py",
    "--scale": "jobs/reframe/make_references.py", "--with-cuda": "UCX configure", "--with-verbs": "UCX configure",
    "--without-verbs": "UCX configure", "--without-rdmacm": "UCX configure",
    "--password": "an example of a secret the environment filter drops",
    "--example-lanes": "tests/contract/example_transport/example_transport.cpp",
}


class ProseFlags(unittest.TestCase):
    def test_flags_in_code_spans(self):
        """Every --flag in a code span is a gdrbench flag or a listed flag of another program,
        and each listed script flag is in that script."""
        ours = set()
        for sub in [""] + sorted(subcommands() | set(analysis_flags())):
            ours |= help_flags(sub)
        bad = [f"{doc}: {f}" for doc in DOCS for span in CODE.findall(prose(doc))
               for f in re.findall(r"(?:^|\s)(--[a-z][\w-]*)", span) if f not in ours and f not in FOREIGN_FLAGS]
        self.assertEqual(sorted(set(bad)), [])
        for flag, owner in FOREIGN_FLAGS.items():
            if owner.startswith(("jobs/", "tests/")):
                self.assertIn(flag, read(owner), f"{owner} has no {flag}")


class Commands(unittest.TestCase):
    def test_every_shell_block_is_accounted_for(self):
        """Each shell block is run here, run by named ctest tests, or needs what CPU machines lack."""
        bad, untested = [], {}
        for doc in DOCS:
            for b in blocks(doc):
                if b.kind == "fence" and not b.lang:
                    bad.append(f"{b.where()}: a fence without a language (sh, text, python, ...)")
                if b.kind != "fence" or b.lang not in SHELL:
                    continue
                kind, arg = b.marker or ("", "")
                if kind == "needs":
                    what = set(re.split(r"[,\s]+", arg.split("--")[0].strip())) - {""}
                    if not what or not what <= NEEDS:
                        bad.append(f"{b.where()}: needs '{arg}': want some of {sorted(NEEDS)}")
                elif kind == "covered-by":
                    bad += self.covered(b, arg.split())
                elif kind == "runs" and arg == "docs":
                    bad += self.run_here(b)
                elif kind == "untested" and arg:
                    untested[doc] = untested.get(doc, 0) + 1
                else:
                    bad.append(f"{b.where()}: shell block without a runs/covered-by/needs marker")
        self.assertEqual(bad, [], "\n".join(bad))
        self.assertEqual(untested, UNTESTED)

    def covered(self, b, names):
        tests = ctest_tests()
        bad = [f"{b.where()}: no ctest test '{n}'" for n in names if n != "ci" and n not in tests]
        text = "\n".join(test_text(tests[n]) for n in names if n in tests)
        if "ci" in names:
            text += read(".ci/run") + read("tests/run_all.sh")
        for cmd in shell_commands(b):
            for tok in command_tokens(cmd):
                if tok not in text:
                    bad.append(f"{b.where()}: '{tok}' of `{cmd}` appears in none of {names}")
        return bad

    def run_here(self, b):
        bad = []
        env = dict(os.environ, PATH=os.path.dirname(GDRBENCH) + os.pathsep + os.environ["PATH"])
        for cmd in shell_commands(b):
            p = subprocess.run(["bash", "-c", cmd], cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=120)
            if p.returncode != 0:
                bad.append(f"{b.where()}: `{cmd}` exit {p.returncode}\n{p.stdout[-2000:]}")
        return bad


def test_text(t):
    """A ctest test's command line and the repository scripts it names, one level down too."""
    parts, seen = [" ".join(t["command"])], set()
    wd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), "")
    todo = [a for a in t["command"] if a.startswith(REPO)]
    todo += [os.path.join(wd, a + ".py") for a in t["command"] if wd and re.match(r"^test_\w+$", a)]
    todo += [os.path.join(wd, a) for a in t["command"] if wd and re.match(r"^[\w-]+\.(py|sh)$", a)]
    for depth in range(2):
        nxt = []
        for path in todo:
            if path in seen or not os.path.isfile(path):
                continue
            seen.add(path)
            try:
                with open(path, encoding="utf-8") as f:
                    body = f.read()
            except UnicodeDecodeError:
                continue
            parts.append(body)
            nxt += [os.path.join(REPO, m) for m in re.findall(r"((?:jobs|tests|results)/[\w./-]+\.(?:sh|py))", body)]
            nxt += [os.path.join(os.path.dirname(path), m) for m in re.findall(r"([\w-]+\.(?:sh|py))\b", body)]
        todo = nxt
    return "\n".join(parts)


def command_tokens(cmd):
    """What a covering test must show of a command: each program or script (of every part joined
    by &&, ;, |), the gdrbench subcommand's words, the long flags."""
    toks = []
    for part in re.split(r"&&|\|\||[;|()]", cmd):
        words = [w for w in part.split() if not re.match(r"^[A-Z_]+=", w)]
        if words and words[0] not in (".", "cd", "mpirun", "srun", "salloc", "sudo", "export"):
            toks.append(os.path.basename(words[0]))
        toks += [w.split("=")[0] for w in words if w.startswith("--")]
    for sub, _ in gdrbench_calls(cmd):
        toks += sub.split()
    return toks


class Numbers(unittest.TestCase):
    def test_archived_numbers(self):
        """Every decimal number of a block marked `archive: FILE` reads so from that file."""
        bad, unarchived = [], {}
        for doc in DOCS:
            for b in blocks(doc):
                if not b.marker or b.marker[0] != "archive":
                    continue
                if b.marker[1].startswith("none"):
                    unarchived[doc] = unarchived.get(doc, 0) + 1
                    continue
                values = archive_values(b.marker[1].split())
                if isinstance(values, str):
                    bad.append(f"{b.where()}: {values}")
                    continue
                for x in DECIMAL.findall(b.text()):
                    if not matches(x, values):
                        bad.append(f"{b.where()}: {x} is not in {b.marker[1]}")
        self.assertEqual(bad, [], "\n".join(bad))
        self.assertEqual(unarchived, UNARCHIVED)

    def test_measurement_tables_are_marked(self):
        """A table of decimal numbers in docs/measurements/ names its archived run."""
        bad = [b.where() for doc in DOCS if doc.startswith("docs/measurements/") for b in blocks(doc)
               if b.kind == "table" and DECIMAL.search(b.text()) and not (b.marker and b.marker[0] == "archive")]
        self.assertEqual(bad, [])


def archive_text(f):
    """The text of an archived file: plain, gzipped, or every text member of a tarball."""
    path = os.path.join(REPO, f)
    if f.endswith((".tgz", ".tar.gz", ".tar.xz")):
        with tarfile.open(path) as tar:
            return "\n".join(tar.extractfile(m).read().decode("utf-8", "replace") for m in tar if m.isfile())
    if f.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as g:
            return g.read()
    if f.endswith((".txt", ".jsonl", ".json")):
        return read(f)
    return None


def archive_values(files):
    values = set()
    for f in map(resolve_archive, files):
        if not f.startswith("results/archive/") or not os.path.isfile(os.path.join(REPO, f)):
            return f"no archived file {f}"
        text = archive_text(f)
        if text is None:
            return f"{f}: only text archives (.txt, .json, .jsonl, .gz, .tgz) are read"
        values.update(float(v) for v in re.findall(r"\d+\.\d+|\d+", text))
    return values


def matches(x, values):
    """x, with d decimals, is a value of the file shown to d decimals."""
    d = len(x.split(".")[1])
    v = float(x)
    return any(abs(y - v) <= 0.5 * 10 ** -d + 1e-9 for y in values)


if __name__ == "__main__":
    unittest.main()
