#!/usr/bin/env python3
"""C++ functions are at most 80 lines, in src/, transports/ and collectives/ (not tests/).

A function is a `{` block, outside any other function, whose header looks like a
function definition: a parameter list `(...)` followed by nothing but qualifiers
(const, noexcept, override, final, &, ->  a return type), or a constructor's
`: member(...)` initializer list. Its length runs from the line of its name to the
line of its closing brace. Comments, strings (raw ones too), character literals and
preprocessor lines are blanked first, so a brace in them counts for nothing.

ALLOWED lists the functions still over the limit, each with its length today. The
check fails when a function not listed is over 80 lines, when a listed one grew, and
when a listed one is now 80 lines or less or gone (take it off the list): the list
only shrinks.

    check_cpp_shape.py [--root DIR] [--list]   exit 0 held, 1 not held, 2 bad input
"""
import argparse
import os
import re
import sys

LIMIT = 80
FOLDERS = ("src", "transports", "collectives")
SUFFIXES = (".cpp", ".h", ".cu")
# "path name": lines today. Shrinks as they are split; never grows.
ALLOWED = {
}

KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "alignas",
            "noexcept", "static_assert", "throw", "new", "delete", "typeid", "requires", "co_return"}
NUMBER_TOKEN = re.compile(r"[0-9A-Za-z_'.]")
TAIL = re.compile(r"\s*((const|volatile|noexcept|override|final|mutable|&&|&|throw\s*\(\s*\))\s*"
                  r"|noexcept\s*\([^()]*\)\s*)*(->.*)?", re.S)
CTOR_TAIL = re.compile(r"\s*(noexcept\s*)?(?<!:):(?!:)", re.S)
NAME = re.compile(r"(operator\s*(\(\)|\[\]|[^\w\s()]+|\s\w[\w:<>]*)|[~\w][\w:~<>,]*?|\])\s*$")


def _preprocessor_end(text, i):
    """Where the preprocessor line starting at i ends, with its continuations and a comment
    that runs past it."""
    n, j = len(text), i
    while j < n and text[j] != "\n":
        if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
            j += 2
            continue
        if text.startswith("/*", j):
            e = text.find("*/", j + 2)
            j = n if e < 0 else e + 2
            continue
        j += 1
    return j


def _string_end(text, i):
    """Where the string literal opening at i ends (one past its closing quote); raw strings too."""
    k = i - 1
    while k >= 0 and (text[k].isalnum() or text[k] == "_"):
        k -= 1
    if text[k + 1:i].endswith("R"):  # R"delim( ... )delim"
        open_paren = text.find("(", i)
        delim = text[i + 1:open_paren]
        end = text.find(")" + delim + '"', open_paren)
        if open_paren < 0 or end < 0:
            raise ValueError(f"unterminated raw string at offset {i}")
        return end + len(delim) + 2
    j = i + 1
    while j < len(text) and text[j] != '"':
        if text[j] == "\n":
            raise ValueError(f"unterminated string at offset {i}")
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _char_end(text, i):
    """Where the character literal opening at i ends (its closing quote), or None for a digit
    separator (1'000'000)."""
    k = i - 1
    while k >= 0 and NUMBER_TOKEN.match(text[k]):
        k -= 1
    if k + 1 < i and text[k + 1].isdigit():
        return None
    j = i + 1
    while j < len(text) and text[j] != "'":
        if text[j] == "\n":
            raise ValueError(f"unterminated character literal at offset {i}")
        j += 2 if text[j] == "\\" else 1
    return j


def blank(text):
    """The text with comments, string and character literals and preprocessor lines
    turned to spaces, newlines kept (so line numbers stay)."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = _preprocessor_end(text, i)
            wipe(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"':
            j = _string_end(text, i)
            wipe(i + 1, j - 1)
            i = j
        elif c == "'":
            j = _char_end(text, i)
            if j is None:
                i += 1
                continue
            wipe(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def paren_groups(header):
    """(start, end) of each (...) group at the level the header ends on: inside a
    macro's open parenthesis (a lambda given to a registration macro), the groups
    after it."""
    groups, opened = [], []
    for k, c in enumerate(header):
        if c == "(":
            opened.append(k)
        elif c == ")":
            if not opened:
                return []
            start = opened.pop()
            groups = [g for g in groups if g[0] < start]  # groups of the level inside are not ours
            groups.append((start, k + 1))
    if opened:
        groups = [g for g in groups if g[0] > opened[-1]]
    return groups


def name_before(header, start):
    """The name a parameter list at `start` belongs to, or None (a keyword, a number)."""
    m = NAME.search(header[:start])
    if not m:
        return None
    name = m.group(1).strip()
    if name == "]":
        return "lambda"
    if name in KEYWORDS or name[0].isdigit():
        return None
    return name


def constructor(header):
    """The constructor whose `: member(...)` list the header holds, or None."""
    for start, end in paren_groups(header):
        if CTOR_TAIL.match(header, end):
            return name_before(header, start)
    return None


def function_name(header):
    """The function a block header defines, or None when it is no function header."""
    groups = paren_groups(header)
    if not groups:
        return None
    if header.rstrip().endswith((")", "}")):  # a constructor: `X::X(...) : a_(x), b_{y}`
        name = constructor(header)
        if name:
            return name
    for start, end in reversed(groups):
        if TAIL.fullmatch(header, end):
            return name_before(header, start)
    return None


def functions(text):
    """(line of the name, name, lines) of each function outside any other function."""
    clean = blank(text)
    found = []
    stack = []  # per open brace: None for a block, (name, first line) for a function
    header_start = 0
    in_function = 0
    i = 0
    n = len(clean)
    while i < n:
        c = clean[i]
        if c in ";":
            if not in_function:
                header_start = i + 1
        elif c == "{":
            header = clean[header_start:i]
            if not in_function and re.search(r"[\w>]\s*$", header) and constructor(header):
                # a member's brace initializer inside a constructor's list: `: a_{x}, b_(y) {`
                depth = 0
                for j in range(i, n):
                    depth += {"{": 1, "}": -1}.get(clean[j], 0)
                    if depth == 0:
                        break
                i = j + 1
                continue
            name = None if in_function else function_name(header)
            if name is not None:
                m = re.search(re.escape(name.split("::")[-1]) if name != "lambda" else r"\]", header)
                at = header_start + (m.start() if m else len(header.rstrip()))
                stack.append((name, clean.count("\n", 0, at) + 1))
                in_function += 1
            else:
                stack.append(None)
            if not in_function:
                header_start = i + 1
        elif c == "}":
            if not stack:
                raise ValueError(f"unbalanced '}}' at line {clean.count(chr(10), 0, i) + 1}")
            top = stack.pop()
            if top is not None:
                in_function -= 1
                if not in_function:
                    name, first = top
                    last = clean.count("\n", 0, i) + 1
                    found.append((first, name, last - first + 1))
            if not in_function:
                header_start = i + 1
        i += 1
    if stack:
        raise ValueError("unbalanced '{' at the end of the file")
    return found


def scan(root):
    """{"path name": (line, lines)} of every function; bad lists files that cannot be read."""
    out, bad = {}, []
    for folder in FOLDERS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                try:
                    with open(path, encoding="utf-8") as fh:
                        found = functions(fh.read())
                except (ValueError, UnicodeDecodeError) as e:
                    bad.append(f"{rel}: cannot read its functions: {e}")
                    continue
                for line, name, lines in found:
                    key = f"{rel} {name}"
                    if key in out:  # overloads: keep the longest under one key
                        if out[key][1] >= lines:
                            continue
                    out[key] = (line, lines)
    return out, bad


def check(found, allowed):
    """The complaints, one line each; empty when the rule holds."""
    out = []
    for key, (line, lines) in sorted(found.items()):
        path, name = key.split(" ", 1)
        if lines <= LIMIT:
            continue
        if key not in allowed:
            out.append(f"{path}:{line} {name} {lines} lines (at most {LIMIT}: split it)")
        elif lines > allowed[key]:
            out.append(f"{path}:{line} {name} {lines} lines, grew from {allowed[key]} (allowed only to shrink)")
    for key, was in sorted(allowed.items()):
        path, name = key.split(" ", 1)
        if key not in found:
            out.append(f"{path} {name}: listed in ALLOWED ({was} lines) but not found: take it off the list")
        elif found[key][1] <= LIMIT:
            out.append(f"{path}:{found[key][0]} {name} is {found[key][1]} lines now: take it off ALLOWED")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--list", action="store_true", help="print every function over the limit and stop")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    if not all(os.path.isdir(os.path.join(root, f)) for f in FOLDERS):
        print(f"check_cpp_shape: {root} holds no {', '.join(FOLDERS)}", file=sys.stderr)
        return 2
    found, bad = scan(root)
    if args.list:
        for key, (line, lines) in sorted(found.items(), key=lambda kv: -kv[1][1]):
            if lines > LIMIT:
                path, name = key.split(" ", 1)
                print(f"{path}:{line} {name} {lines}")
        return 0
    complaints = bad + check(found, ALLOWED)
    for c in complaints:
        print(c)
    over = sum(1 for _, lines in found.values() if lines > LIMIT)
    print(f"check_cpp_shape: {len(found)} functions, {over} over {LIMIT} lines, "
          f"{len(ALLOWED)} allowed for now; {'held' if not complaints else 'NOT held'}")
    return 1 if complaints else 0


if __name__ == "__main__":
    sys.exit(main())
