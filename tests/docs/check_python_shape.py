#!/usr/bin/env python3
"""The shape of the tree's Python: no function longer than MAX_LINES lines and
no import cycle among the modules of results/gdranalysis.

A function's length runs from its `def` line (decorators not counted) to its
last line (`end_lineno`), blank lines and comments inside it included; a nested
function counts in its parent too. Exit 0 when the tree keeps both rules, 1
with one line a finding otherwise: `file:line name length` for a long function,
`import cycle: a -> b -> a` for a cycle. Bad input (a file that does not
parse): one line, exit 2.

Python only, by design: the C++ side gets its own checker beside this one
(check_cpp_shape.py), sharing MAX_LINES and long_function_line() so that both
report in one format.
"""
import ast
import pathlib
import sys
import tempfile

MAX_LINES = 80
ROOT = pathlib.Path(__file__).resolve().parents[2]
# The product's Python and the tests': every .py below these folders.
PYTHON_TREES = ("results", "jobs", "tests")
PACKAGE = ROOT / "results" / "gdranalysis"


def long_function_line(path, line, name, length):
    """One finding, as every shape checker reports it."""
    return f"{path}:{line} {name} {length}"


def python_files(root=ROOT, trees=PYTHON_TREES):
    for tree in trees:
        yield from sorted((root / tree).rglob("*.py"))


def parse(path):
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as err:
        print(f"check_python_shape: cannot parse {path}: {err}", file=sys.stderr)
        sys.exit(2)


def functions(tree):
    """(qualified name, def line, length in lines) of every function and method."""
    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                yield name, child.lineno, child.end_lineno - child.lineno + 1
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)
    yield from walk(tree, "")


def long_functions(paths, root=ROOT, limit=MAX_LINES):
    found = []
    for path in paths:
        for name, line, length in functions(parse(path)):
            if length > limit:
                found.append(long_function_line(path.relative_to(root), line, name, length))
    return found


def package_imports(package_dir):
    """{module: set of sibling modules it imports}, at any depth of the module
    (an import inside a function is still an arrow)."""
    modules = {p.stem for p in package_dir.glob("*.py")}
    package = package_dir.name
    graph = {}
    for module in sorted(modules):
        arrows = set()
        for node in ast.walk(parse(package_dir / f"{module}.py")):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 or node.module == package:
                    # from . import a, b   /   from gdranalysis import a
                    if node.module in (None, package):
                        arrows.update(a.name for a in node.names if a.name in modules)
                    else:  # from .a import x
                        arrows.add(node.module.split(".")[0])
                elif node.module and node.module.startswith(package + "."):
                    arrows.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == package and len(parts) > 1:
                        arrows.add(parts[1])
        graph[module] = (arrows & modules) - {module}
    return graph


def import_cycles(graph):
    """Each strongly connected set of modules of more than one, as one cycle
    through all of it (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(cycle_through(graph, set(group)))
    return cycles


def cycle_through(graph, group):
    """A closed walk that names the modules of one strongly connected group,
    each arrow a real import: from the first module, always to the nearest
    module of the group not yet named, back to the first at the end."""
    first = min(group)
    path, seen = [first], {first}
    while len(seen) < len(group):
        step = shortest(graph, path[-1], group - seen, group)
        path += step
        seen.update(step)
    path += shortest(graph, path[-1], {first}, group)
    return path


def shortest(graph, start, targets, group):
    """The modules after `start` on a shortest path inside `group` to any of `targets`."""
    parents, frontier = {start: None}, [start]
    while frontier:
        after = []
        for node in frontier:
            for child in sorted(graph[node] & group):
                if child in targets:
                    steps = [child]
                    while node != start:
                        steps.append(node)
                        node = parents[node]
                    return steps[::-1]
                if child not in parents:
                    parents[child] = node
                    after.append(child)
        frontier = after
    raise AssertionError(f"no path from {start} in a strongly connected group")


def findings_in(root, trees, package_dir):
    """Every finding of the tree at `root`, in the order they are printed."""
    found = long_functions(python_files(root, trees), root)
    for cycle in import_cycles(package_imports(package_dir)):
        found.append("import cycle: " + " -> ".join(cycle))
    return found


def self_check():
    """The checker finds what it is for: a planted long function (nested in a
    class, its decorator not counted), a cycle through a relative, an absolute
    and a function-local import, and nothing in a tree that keeps the rules."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        pkg = root / "tree" / "pkg"
        pkg.mkdir(parents=True)
        body = "".join(f"        x = {i}\n" for i in range(MAX_LINES))
        (pkg / "a.py").write_text("from . import b\n\n\nclass K:\n    @staticmethod\n"
                                  f"    def long():\n{body}\n    def short():\n        pass\n")
        (pkg / "b.py").write_text("import pkg.c\n")
        (pkg / "c.py").write_text("def f():\n    from .a import K\n")
        (pkg / "d.py").write_text("from .b import x\n")
        found = findings_in(root, ("tree",), pkg)
        want = [f"tree/pkg/a.py:6 K.long {MAX_LINES + 1}", "import cycle: a -> b -> c -> a"]
        if found != want:
            raise AssertionError(f"check_python_shape misses what it is for: {found} != {want}")
        # MAX_LINES lines from def to end: not over
        (pkg / "a.py").write_text("def long():\n" + "".join(f"    x = {i}\n" for i in range(MAX_LINES - 1)))
        (pkg / "c.py").write_text("")
        if findings_in(root, ("tree",), pkg):
            raise AssertionError("check_python_shape finds problems in a tree without them")


def main():
    self_check()
    findings = findings_in(ROOT, PYTHON_TREES, PACKAGE)
    for line in findings:
        print(line)
    if findings:
        print(f"check_python_shape: {len(findings)} finding(s): functions over "
              f"{MAX_LINES} lines, import cycles in {PACKAGE.relative_to(ROOT)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
