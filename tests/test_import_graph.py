"""The import graph of src/digest, drawn from the source: no cycle, and no import climbing
from a lower layer to a higher one.

Layers, lowest first: the shared modules (store/, runtime/ and the modules beside the
packages: models, lifecycle, config, text, urls…), which import no stage; then the stage
packages, each importing only the stages below it; then the shell (cli/, commands/,
pipeline, jobs, daemon), which may import anything. The stages are ordered by who uses whom:
extract is pure (page in, text out) and fetch runs it; collect reads feeds through fetch's
guarded client; notes read extract's verdicts and fetch's Retry-After; compose reads the
notes; the audio edition reads the composed week; deliver sends all of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import digest

SRC = Path(digest.__file__).parent
STAGES = ("extract", "fetch", "collect", "notes", "compose", "audio", "deliver")
SHELL = ("cli", "commands", "pipeline", "jobs", "daemon", "__main__")
# Imports that climb today, by (importer, imported) module; to be moved by issue 33's moves
# (what fetch, compose and ranking all read moves below the stages). Only ever shrinks.
KNOWN_CLIMBS = {
    ("digest.fetch.stage", "digest.compose.features"),  # fetch stores compose's features
    ("digest.runtime.logs", "digest.fetch.access"),  # the log masks feeds' secrets
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in SRC.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The digest modules `name` imports, anywhere in it (a lazy import is a dependency
    too): `from a.b import c` is a.b.c when that is a module, else a.b."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            if base == "digest" or base.startswith("digest."):
                found |= {
                    f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                    for a in node.names
                }
    return found - {name}


GRAPH = {name: imports_of(name) for name in MODULES}


def layer(name: str) -> int:
    """0 for a shared module, 1 + its index in STAGES for a stage's, past them for the shell."""
    top = name.split(".")[1] if "." in name else ""
    if top in STAGES:
        return 1 + STAGES.index(top)
    return len(STAGES) + 1 if top in SHELL else 0


def test_the_graph_is_drawn_from_every_module_and_its_imports() -> None:
    assert len(MODULES) > 100
    assert {"digest.store", "digest.extract", "digest.lifecycle"} <= GRAPH["digest.fetch.stage"]
    assert "digest.notes.tags" in GRAPH["digest.compose.features"]  # from a function's body
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"],
        ["d"],
    ]


def test_no_module_imports_itself_through_others() -> None:
    cycles = [cycle for cycle in strongly_connected(GRAPH) if len(cycle) > 1]
    assert cycles == []


def test_no_import_climbs_from_a_lower_layer_to_a_higher_one() -> None:
    shell = len(STAGES) + 1
    climbs = {
        (importer, imported)
        for importer, targets in GRAPH.items()
        for imported in targets
        if layer(importer) < shell and layer(imported) > layer(importer)
    }
    assert climbs - KNOWN_CLIMBS == set(), "an import climbs: see the layers in this test's note"
    assert KNOWN_CLIMBS - climbs == set(), "a known climb is gone: take it off KNOWN_CLIMBS"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (no recursion limit on a deep chain of imports)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components
