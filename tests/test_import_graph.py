"""The import graph of src/digest, drawn from the source: no cycle, and no import climbing
from a lower layer to a higher one.

Layers, lowest first: the shared modules (store/, runtime/ and the modules beside the
packages: models, lifecycle, config, text, urls, and what several stages read of an item:
features, tagwords, unfetched…), which import no stage; then the stage packages, each
importing only the stages below it; then the shell (cli/, commands/, pipeline, jobs,
daemon), which may import anything. The stages are ordered by who uses whom:
extract is pure (page in, text out) and fetch runs it; collect reads feeds through fetch's
guarded client; notes read extract's verdicts and fetch's Retry-After; compose reads the
notes; the audio edition reads the composed week; deliver sends all of it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import digest

SRC = Path(digest.__file__).parent
STAGES = ("extract", "fetch", "collect", "notes", "compose", "audio", "deliver")
SHELL = ("cli", "commands", "pipeline", "jobs", "daemon", "__main__")


def bench_structure() -> Any:
    """bench/structure.py, whose import graph (imports inside functions counted) this draws."""
    path = Path(__file__).parents[1] / "bench" / "structure.py"
    spec = importlib.util.spec_from_file_location("bench_structure", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STRUCTURE = bench_structure()
PATHS = {STRUCTURE.module_name(path, SRC): path for path in SRC.rglob("*.py")}
GRAPH: dict[str, set[str]] = {
    name: STRUCTURE.imported_modules(
        ast.parse(path.read_text(encoding="utf-8")),
        name,
        path.name == "__init__.py",
        set(PATHS),
        deferred=True,
    )
    for name, path in PATHS.items()
}


def layer(name: str) -> int:
    """0 for a shared module, 1 + its index in STAGES for a stage's, past them for the shell."""
    top = name.split(".")[1] if "." in name else ""
    if top in STAGES:
        return 1 + STAGES.index(top)
    return len(STAGES) + 1 if top in SHELL else 0


def test_the_graph_is_drawn_from_every_module_and_its_imports() -> None:
    assert len(GRAPH) > 100
    assert {"digest.fetch.client", "digest.extract", "digest.lifecycle"} <= GRAPH[
        "digest.fetch.pages"
    ]
    assert "digest.fetch.access" in GRAPH["digest.cli.run"]  # from a function's body


def test_no_module_imports_itself_through_others() -> None:
    assert STRUCTURE.cycles(GRAPH) == []


def test_no_import_climbs_from_a_lower_layer_to_a_higher_one() -> None:
    shell = len(STAGES) + 1
    climbs = {
        (importer, imported)
        for importer, targets in GRAPH.items()
        for imported in targets
        if layer(importer) < shell and layer(imported) > layer(importer)
    }
    assert climbs == set(), "an import climbs: see the layers in this test's note"
