#!/usr/bin/env python3
"""Fails on a shell pipe that can fail by itself under `set -o pipefail`.

`cmd | grep -q PAT`, `cmd | head -1` and `cmd | grep -m N` stop reading at
their first match; when `cmd` writes again it dies of SIGPIPE, and pipefail
turns a match into a failure. Whether it happens depends on scheduling: CI's
slurm.srun_pmi2 failed so once (`ldd gdrbench | grep -q libmpi`) after many
passes. Capture first (`grep -q PAT <<< "$(cmd)"`) or read all (`sed -n 1p`).

    check_shell_pipes.py ROOT      every *.sh under ROOT that sets pipefail
    check_shell_pipes.py --selftest
"""
import pathlib
import re
import sys

# A pipe into a reader that may exit before its writer is done.
EARLY_EXIT = re.compile(r"\|\s*(head\b|grep\s+(-\S*\s+)*-[a-zA-Z]*[qm]|grep\s+(\S+\s+)*--quiet)")
SKIP_DIRS = {".git", "build", "build-asan", ".device", "node_modules"}


def offending_lines(text):
    """(line number, line) of each early-exit pipe outside comments."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        if EARLY_EXIT.search(code):
            found.append((n, line.strip()))
    return found


def scripts(root):
    for path in sorted(root.rglob("*.sh")):
        if SKIP_DIRS.intersection(path.relative_to(root).parts):
            continue
        text = path.read_text(errors="replace")
        if "pipefail" in text:
            yield path, text


def selftest():
    bad = ['ldd "$gdr" | grep -qE "libmpi"', "x=$(find . -name a | head -1)",
           "cmd | grep -c x | grep -m1 y", "cmd|grep --quiet x"]
    good = ['grep -qE "libmpi" <<< "$(ldd "$gdr")"', "x=$(find . | sed -n 1p)",
            "# ldd | grep -q in a comment", "grep -q x file", "cmd | grep -c x"]
    for line in bad:
        assert offending_lines(line), f"missed: {line}"
    for line in good:
        assert not offending_lines(line), f"flagged: {line}"
    print(f"check_shell_pipes: selftest ok ({len(bad)} caught, {len(good)} passed)")


def main(argv):
    if argv[1:] == ["--selftest"]:
        selftest()
        return 0
    if len(argv) != 2 or not pathlib.Path(argv[1]).is_dir():
        print("usage: check_shell_pipes.py ROOT | --selftest", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    selftest()
    checked, bad = 0, []
    for path, text in scripts(root):
        checked += 1
        bad += [f"{path.relative_to(root)}:{n}: {line}" for n, line in offending_lines(text)]
    for b in bad:
        print(f"early-exit pipe under pipefail (capture first, or read all): {b}")
    print(f"check_shell_pipes: {checked} scripts with pipefail, {len(bad)} early-exit pipes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
