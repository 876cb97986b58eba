"""No import circles between the project's modules (docs/architecture.md, "The layers"): not
inside one app, not across apps. Imports inside functions count too (grimp
reads every import statement of a module, wherever it stands), so a circle cannot hide in a
function body. import-linter (`make layers`) checks the direction between apps; this checks the
modules of each app among themselves as well.
"""

import itertools

import grimp

APPS = ("common", "seasons", "events", "anticheat", "boards", "scoring", "leaderboard_site")

# Circles known and not cut yet, each as the sorted tuple of its modules (a strongly connected
# component of the import graph). Empty: there are none. A circle found here that is not listed
# fails the test; one listed that is gone fails it too, so the list never outlives the circle.
ALLOWED: frozenset[tuple[str, ...]] = frozenset()


def _circles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative),
    and the modules that import themselves."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:  # back to the parent: carry the low link up
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(tuple(sorted(component)))
    return sorted(found)


def _describe(graph: grimp.ImportGraph, component: tuple[str, ...]) -> str:
    """One loop through the component, with the line of each import: where to cut it."""
    members = set(component)
    start = component[0]
    nxt = next(m for m in sorted(graph.find_modules_directly_imported_by(start)) if m in members)
    back = graph.find_shortest_chain(importer=nxt, imported=start) or (nxt, start)
    loop = [start, *back]
    steps = []
    for importer, imported in itertools.pairwise(loop):
        lines = sorted(d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported))
        steps.append(f"{importer} -> {imported} (line {', '.join(map(str, lines))})")
    return "; ".join(steps)


def test_no_import_circles():
    # No cache: other runs (lint-imports, a parallel pytest) may be writing theirs.
    graph = grimp.build_graph(*APPS, include_external_packages=False, cache_dir=None)
    circles = _circles(graph)
    unexpected = [c for c in circles if c not in ALLOWED]
    assert not unexpected, "import circles:\n" + "\n".join(_describe(graph, c) for c in unexpected)
    gone = ALLOWED - set(circles)
    assert not gone, f"allowed circles that are gone (drop them from ALLOWED): {sorted(gone)}"


def test_a_circle_closed_inside_a_function_is_found(tmp_path, monkeypatch):
    """The check itself, on a package whose circle closes through an import inside a function (as
    scoring.services -> scoring.tasks once did)."""
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import y\n\nx = 1\n")
    (package / "b.py").write_text("y = 2\n\n\ndef later():\n    from .a import x\n\n    return x\n")
    (package / "c.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circled", include_external_packages=False, cache_dir=None)
    assert _circles(graph) == [("circled.a", "circled.b")]
    loop = _describe(graph, ("circled.a", "circled.b"))
    assert loop == "circled.a -> circled.b (line 1); circled.b -> circled.a (line 5)"
