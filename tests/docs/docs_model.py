"""The docs as data, for test_docs.py: the Markdown files, their fenced blocks,
tables and paragraphs, the marker comment before each, links and headings.

A marker is an HTML comment alone on the line before a fence, table or
paragraph (docs/developers/testing.md#docs-checks):
  <!-- runs: docs -->            <!-- covered-by: NAME ... -->
  <!-- needs: gpu ... -->        <!-- archive: results/archive/FILE ... -->
  <!-- archive: none -- WHY -->  <!-- counts: ... -->"""
import glob
import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = re.compile(r"^\s*<!--\s*([a-z-]+):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
# Files whose prose the checks read: the README and every page under docs/.
DOCS = ["README.md"] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "**", "*.md"),
                                                                        recursive=True))


def tracked_markdown():
    """Every Markdown file in git (links into the docs live there too), but the archive's and corpora."""
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, text=True, stdout=subprocess.PIPE, check=True).stdout
    return [p for p in out.split() if not p.startswith(("results/archive/", "tests/fuzz/corpus/"))]


def read(rel):
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        return f.read()


class Block:
    """A fenced block, a table or a paragraph, with the marker before it."""

    def __init__(self, doc, line, kind, lang, lines, marker):
        self.doc, self.line, self.kind, self.lang, self.lines, self.marker = doc, line, kind, lang, lines, marker

    def where(self):
        return f"{self.doc}:{self.line}"

    def text(self):
        return "\n".join(self.lines)


def blocks(doc):
    """The blocks of one file, in order. Fence content is kept verbatim."""
    lines = read(doc).split("\n")
    out, i, marker = [], 0, None
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            marker = (m.group(1), m.group(2))
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(f.group(2)):
                j += 1
            body = [x[len(f.group(1)):] if x.startswith(f.group(1)) else x for x in lines[i + 1:j]]
            out.append(Block(doc, i + 1, "fence", f.group(3), body, marker))
            i, marker = j + 1, None
            continue
        if not line.strip():
            i += 1
            continue
        kind = "table" if line.lstrip().startswith("|") else "para"
        j = i
        while j < len(lines) and lines[j].strip() and not FENCE.match(lines[j]) and not MARKER.match(lines[j]) \
                and (lines[j].lstrip().startswith("|")) == (kind == "table"):
            j += 1
        out.append(Block(doc, i + 1, kind, "", lines[i:j], marker))
        i, marker = j, None
    return out


def prose(doc):
    """The text of a file outside its fences (for inline code and links)."""
    return "\n".join(b.text() for b in blocks(doc) if b.kind != "fence")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    h = heading.strip().lower().replace("`", "")
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(doc):
    text = "\n".join(b.text() for b in blocks(doc) if b.kind != "fence")
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def shell_commands(block):
    """The commands of a shell block: comments dropped, continuations joined."""
    cmds, cur = [], ""
    for raw in block.lines:
        line = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip() and not cur:
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip():
            cmds.append(cur.strip())
        cur = ""
    return cmds


TOP = set(os.listdir(REPO)) - {".git", "build", "build-asan"}


def archive_aliases():
    """{old name: new name} of results/archive/aliases.tsv: files renamed for what they measured."""
    out = {}
    for line in read("results/archive/aliases.tsv").split("\n"):
        parts = line.split("\t")
        if len(parts) == 2 and not line.startswith("#") and parts != ["old", "new"]:
            out[parts[0]] = parts[1]
    return out


def resolve_archive(path):
    """A path under results/archive/ with an old name given as its new one; any other path as is."""
    head, _, name = path.rpartition("/")
    if head == "results/archive":
        return f"{head}/{archive_aliases().get(name, name)}"
    return path


def repo_path_candidates(text):
    """Tokens that name a path in the tree: they start at one of its top folders or files."""
    for tok in re.split(r"[\s,;()\"']+", text):
        tok = tok.strip("`.:")
        if not tok or "/" not in tok and tok not in TOP:
            continue
        if any(c in tok for c in "<>{}$*?[]|=") or "..." in tok or tok.startswith(("/", "-", "http")):
            continue
        tok = re.sub(r":\d+$", "", tok)
        if any(re.match(r"^[A-Z][A-Z_]*(\.\w+)?$", part) for part in tok.split("/")[1:]):
            continue  # a placeholder: results/archive/FILE, RUN.h5
        if tok.split("/")[0] in TOP and "#" not in tok:
            yield tok


# Folders whose code comments the comment-path check reads, and the top folders a path in a
# comment must start with to be checked (a bare `file.h` or `../x` is not a repository path).
COMMENT_DIRS = ("src/", "transports/", "collectives/", "jobs/", "results/", "tests/")
PATH_ROOTS = ("src/", "jobs/", "docs/", "results/", "tests/", "transports/", "collectives/", "cmake/")
C_LIKE = (".cpp", ".h", ".hpp", ".cc", ".c", ".cu")
HASH_LIKE = (".py", ".sh", ".cmake", "CMakeLists.txt")


def _outside_quotes(code):
    """True when `code` (a line's text before a comment mark) has no open string."""
    return code.count('"') % 2 == 0 and code.count("'") % 2 == 0


def code_comments(rel):
    """(line, text) of each comment of a tracked source file (comments_of_text)."""
    try:
        return comments_of_text(read(rel), rel.endswith(C_LIKE))
    except UnicodeDecodeError:
        return []


def comments_of_text(text, c_like):
    """(line, text) of each comment: `//` (and `/* */` lines) in C and C++, `#` in Python,
    shell and CMake (not a shebang; a trailing one only after whitespace and outside a string)."""
    lines = text.split("\n")
    out, in_block = [], False
    for n, line in enumerate(lines, 1):
        if c_like:
            if in_block:
                out.append((n, line.split("*/")[0]))
                in_block = "*/" not in line
                continue
            m = re.search(r"(^|\s|;|\{|\})//(.*)$", line)
            if m and _outside_quotes(line[:m.start(2)]):
                out.append((n, m.group(2)))
            elif "/*" in line and _outside_quotes(line[:line.index("/*")]):
                out.append((n, line[line.index("/*") + 2:].split("*/")[0]))
                in_block = "*/" not in line[line.index("/*"):]
        else:
            if n == 1 and line.startswith("#!"):
                continue
            m = re.search(r"(^|\s)#(.*)$", line)
            if m and _outside_quotes(line[:m.start(2)]):
                out.append((n, m.group(2)))
    return out


# A token is taken for a path when it names a file by a known extension, ends in `/`, or has
# two folders or more: `src/dst` (a pair's ends) and `cmake/fmt` (inside a bundle) are words.
PATH_LIKE = re.compile(r"(\.(cpp|h|hpp|cc|c|cu|py|sh|md|txt|json|jsonl|h5|tgz|gz|cmake|in|yaml|yml|toml|cfg|"
                       r"xml|html|csv|supp|modulefile)$)|/$|^[^/]+/[^/]+/")


def comment_paths(comments):
    """(line, path) of each repository path the comments name: a token that starts with one of
    PATH_ROOTS and looks like a path (PATH_LIKE); globs, placeholders and `...` are left out,
    as in the docs."""
    for n, text in comments:
        for p in repo_path_candidates(text):
            p = p.rstrip(",;)")
            if p.startswith(PATH_ROOTS) and PATH_LIKE.search(p):
                yield n, p


def commented_sources():
    """Tracked source files under COMMENT_DIRS whose comments the check reads."""
    out = subprocess.run(["git", "ls-files", *COMMENT_DIRS], cwd=REPO, text=True, stdout=subprocess.PIPE,
                         check=True).stdout
    return [p for p in out.split() if p.endswith(C_LIKE + HASH_LIKE)
            and not p.startswith(("results/archive/", "tests/fuzz/corpus/", "tests/doctor/data/"))]
