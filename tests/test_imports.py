"""nbtext's modules import one another without cycles: each module's imports (those inside
functions too) are read from its source with ast, relative ones resolved, and the module graph
searched for strongly connected components. A cycle hides which layer is below which, and a
function-level import that closes one is a cycle all the same. And every source compiles on each
Python that pyproject.toml's requires-python admits (a docstring's characters)."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "nbtext"

def modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Every module of nbtext by dotted name: (its file, whether it is a package)."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def imports_of(name: str, path: pathlib.Path, package: bool, known) -> set[str]:
    """The nbtext modules ``name`` imports, anywhere in its source. ``from X import y`` is an
    import of the module X.y where there is one, else of X; a name beyond a module (a C
    extension, an attribute) is an import of the nearest module above it."""
    here = name if package else name.rpartition(".")[0]

    def nearest(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [nearest(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else nearest(base) for a in node.names]
        else:
            continue
        found.update(t for t in targets if t and t != name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.add(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, package, known) for name, (path, package) in known.items()}


def test_the_cycle_finder_finds_cycles_and_only_them():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}, "f": {"g"}, "g": {"f"}}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b", "c"], ["f", "g"]]


def test_imports_are_read_inside_functions_and_relative_ones_resolved():
    graph = import_graph()
    assert "nbtext.features.implementation" in graph["nbtext.features.rows"]  # (inside a method)
    assert "nbtext.features.rows" in graph["nbtext.features.kernel"]
    assert "nbtext.errors" in graph["nbtext.process"] and "nbtext" in graph["nbtext.features.implementation"]


def test_no_module_imports_itself_through_others():
    found = [sorted(c) for c in cycles(import_graph())]
    assert found == [], f"import cycles: {found}"


def test_every_docstring_is_text_utf_8_can_encode():
    """From Python 3.13 the compiler dedents a docstring as UTF-8, and refuses one holding a lone
    surrogate (an escape such as backslash-udd00 in a docstring that is not raw): the module then
    fails to import there, though it compiles on 3.12 and before."""
    tree = ROOT.parent
    bad = []
    for path in sorted(p for folder in ("nbtext", "tests", "scripts", "contrib") for p in (tree / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc is not None and not doc.isascii():
                    try:
                        doc.encode("utf-8")
                    except UnicodeEncodeError:
                        bad.append(f"{path.relative_to(tree)}:{getattr(node, 'lineno', 1)}")
    assert bad == []
